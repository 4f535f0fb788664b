// The admin UI's only script: live approval queue (SSE), countdowns, confirmations, and
// showing only the fields of a server form that its transport uses.
// Loaded from /admin/static (the CSP allows no inline script).
"use strict";

function timeLeftText(ms) {
  const seconds = Math.max(0, Math.round(ms / 1000));
  const minutes = Math.floor(seconds / 60);
  if (minutes >= 60) return `${Math.floor(minutes / 60)} h ${minutes % 60} min left`;
  if (minutes >= 1) return `${minutes} min ${seconds % 60} s left`;
  return `${seconds} s left`;
}

function tickCountdowns() {
  for (const card of document.querySelectorAll(".call[data-expires]")) {
    const label = card.querySelector('[data-role="time-left"]');
    const left = Date.parse(card.dataset.expires) - Date.now();
    if (left <= 0) {
      markExpired(card);
    } else {
      label.textContent = timeLeftText(left);
    }
  }
}

function markExpired(card) {
  card.classList.add("expired");
  card.querySelector('[data-role="time-left"]').textContent = "Expired: the call will not run";
  for (const field of card.querySelectorAll("button, input")) field.disabled = true;
}

function updateEmptyState() {
  const empty = document.getElementById("queue-empty");
  if (empty) empty.hidden = document.querySelector("#queue .call") !== null;
}

function setLive(text, on) {
  const status = document.getElementById("live-status");
  if (!status) return;
  status.textContent = text;
  status.classList.toggle("on", on);
  status.classList.toggle("off", !on);
}

function followQueue() {
  const queue = document.getElementById("queue");
  if (!queue || !window.EventSource) return;
  const params = new URLSearchParams();
  // The feed follows the page shown: its cards, not the whole queue.
  params.append("page", queue.dataset.page || "1");
  for (const card of queue.querySelectorAll(".call")) {
    params.append("shown", `${card.dataset.recordId}:${card.dataset.approvals || 0}`);
  }
  const source = new EventSource(`/admin/queue/events?${params}`);
  source.onopen = () => setLive("live", true);
  source.onerror = () => setLive("live updates interrupted, reconnecting…", false);
  source.addEventListener("call", (event) => {
    const data = JSON.parse(event.data);
    const holder = document.createElement("div");
    holder.innerHTML = data.html;  // rendered and escaped by the server's templates
    const card = holder.firstElementChild;
    const shown = document.getElementById(`call-${data.record_id}`);
    if (shown) {
      // Sent again: its approvals changed (one of two given). Keep what the reviewer typed.
      if (shown.dataset.approvals === card.dataset.approvals) return;
      const before = shown.querySelector('[data-role="approvals"]');
      const after = card.querySelector('[data-role="approvals"]');
      if (before && after) before.replaceWith(after);
      shown.dataset.approvals = card.dataset.approvals;
      return;
    }
    card.classList.add("new");
    queue.prepend(card);
    bindConfirmations(card);
    updateEmptyState();
    tickCountdowns();
  });
  source.addEventListener("gone", (event) => {
    const data = JSON.parse(event.data);
    const card = document.getElementById(`call-${data.record_id}`);
    if (!card) return;
    // An expired call stays in view, marked, so the reviewer sees why it went.
    if (data.state === "expired") {
      delete card.dataset.expires;
      markExpired(card);
    } else {
      card.remove();
    }
    updateEmptyState();
  });
  source.addEventListener("running", (event) => {
    const running = document.getElementById("running");
    // Rendered and escaped by the server's templates.
    if (running) running.innerHTML = JSON.parse(event.data).html;
  });
  source.addEventListener("decided", (event) => {
    const decided = document.getElementById("decided");
    // Rendered and escaped by the server's templates.
    if (decided) decided.innerHTML = JSON.parse(event.data).html;
  });
  source.addEventListener("session-expired", () => {
    source.close();
    setLive("session expired: sign in again", false);
    window.location.assign("/admin/login?expired=1");
  });
}

function bindConfirmations(root) {
  for (const form of root.querySelectorAll("form[data-confirm]")) {
    form.addEventListener("submit", (event) => {
      if (!window.confirm(form.dataset.confirm)) event.preventDefault();
    });
  }
}

function showTransportFields(form) {
  const transport = form.querySelector('[data-role="transport"]');
  if (!transport) return;
  const update = () => {
    const wanted = transport.value === "stdio" ? "stdio" : "http";
    for (const group of form.querySelectorAll("[data-transport]")) {
      group.hidden = group.dataset.transport !== wanted;
    }
  };
  transport.addEventListener("change", update);
  update();
}

document.addEventListener("DOMContentLoaded", () => {
  bindConfirmations(document);
  for (const form of document.querySelectorAll("form[data-server-form]")) showTransportFields(form);
  if (document.body.dataset.page === "queue") {
    tickCountdowns();
    window.setInterval(tickCountdowns, 1000);
    followQueue();
  }
});
