"""The mock upstream: nginx answering canned OpenAI bodies from memory.

nginx's ``return`` serves a body held in the configuration, so one worker answers tens of
thousands of requests a second on one core: it is never the bottleneck, and a Python mock would
be. ``/whole`` answers a chat completion, ``/stream`` a complete SSE stream at once, and ``/hold``
the same stream throttled after its first events, to keep many streams open at the same time.
"""

from __future__ import annotations

import json
from pathlib import Path

MODEL = "bench-upstream"
CONTENT_WORDS = ("Hello", " from", " the", " mock", " upstream", ",", " streaming", " fast", ".")
# /hold: the first events go out at once, the rest at this many bytes a second.
HOLD_AFTER_BYTES = 400
HOLD_RATE_BYTES = 25


def completion_body() -> str:
    return json.dumps(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion",
            "created": 1700000000,
            "model": MODEL,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "".join(CONTENT_WORDS)},
                    "finish_reason": "stop",
                    "logprobs": None,
                }
            ],
            "usage": {"prompt_tokens": 12, "completion_tokens": 9, "total_tokens": 21},
        },
        separators=(",", ":"),
    )


def _chunk(delta: dict[str, object], finish: str | None = None) -> dict[str, object]:
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": MODEL,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
    }


def stream_body() -> str:
    chunks: list[dict[str, object]] = [_chunk({"role": "assistant", "content": ""})]
    chunks += [_chunk({"content": word}) for word in CONTENT_WORDS]
    chunks.append(_chunk({}, "stop"))
    usage = {"prompt_tokens": 12, "completion_tokens": 9, "total_tokens": 21}
    chunks.append({**_chunk({}), "choices": [], "usage": usage})
    events = [f"data: {json.dumps(c, separators=(',', ':'))}\n\n" for c in chunks]
    return "".join(events) + "data: [DONE]\n\n"


def _quoted(text: str) -> str:
    """An nginx quoted string; nginx turns these escapes back into the characters."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def nginx_config(workdir: Path, port: int) -> str:
    whole, stream = _quoted(completion_body()), _quoted(stream_body())
    return f"""
daemon off;
master_process on;
worker_processes 1;
user root;
pid {workdir}/nginx.pid;
error_log {workdir}/nginx-error.log warn;
events {{ worker_connections 8192; }}
http {{
    access_log off;
    keepalive_requests 1000000;
    keepalive_timeout 120s;
    client_body_temp_path {workdir}/nginx-body;
    proxy_temp_path {workdir}/nginx-proxy;
    fastcgi_temp_path {workdir}/nginx-fastcgi;
    uwsgi_temp_path {workdir}/nginx-uwsgi;
    scgi_temp_path {workdir}/nginx-scgi;
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        location = /whole/v1/chat/completions {{
            default_type application/json;
            return 200 {whole};
        }}
        location = /stream/v1/chat/completions {{
            default_type text/event-stream;
            return 200 {stream};
        }}
        location = /hold/v1/chat/completions {{
            default_type text/event-stream;
            limit_rate_after {HOLD_AFTER_BYTES};
            limit_rate {HOLD_RATE_BYTES};
            return 200 {stream};
        }}
    }}
}}
"""


def write_nginx_config(workdir: Path, port: int) -> Path:
    path = workdir / "nginx.conf"
    path.write_text(nginx_config(workdir, port))
    return path
