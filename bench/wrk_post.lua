-- POSTs the benchmark body; prints one JSON line of results wrk's own summary lacks (p90).
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("BENCH_AUTH")
wrk.body = os.getenv("BENCH_BODY")

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_us":%d,"socket_errors":%d,"non2xx":%d,' ..
    '"p50_us":%d,"p90_us":%d,"p99_us":%d,"mean_us":%.1f}\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.mean))
end
