"""The `serve` section of scripts/bench: the official Python client against `storesh serve` and against
gcp-storage-emulator (from PyPI), side by side in one run, on buckets of 1,000 and 10,000 objects: upload, list
everything in pages of 100, patch metadata; then a concurrent load of metadata reads and patches over 64
connections with wrk. Prints medians, rates and ratios; never used as a test.

    .venv/bin/python scripts/bench-serve.py STORESH_BINARY [SIZE…]
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import client_for, free_port, stop_server, wait_for

PATCHES = 1000  # patched per bucket size (all of them at 1,000)
# The phases run one request at a time, as a loop over objects does: gcp-storage-emulator stalls (connections time
# out) under 16 client threads. The concurrent load is wrk's, whose errors and timeouts are counted.
CALL_TIMEOUT = 30
MAXIMUM_FAILURES = 5
LOAD_SECONDS = 10
LOAD_CONNECTIONS = 64
BUCKET = "bench-bucket"

LOAD_SCRIPT = r"""
-- Three metadata reads for each patch, on objects picked at random.
local count = tonumber(os.getenv("BENCH_OBJECTS"))
local bucket = os.getenv("BENCH_BUCKET")
local n = 0
request = function()
  n = n + 1
  local path = string.format("/storage/v1/b/%s/o/o%%2F%05d", bucket, math.random(0, count - 1))
  if n % 4 == 0 then
    return wrk.format("PATCH", path, {["Content-Type"] = "application/json"}, '{"metadata":{"load":"' .. n .. '"}}')
  end
  return wrk.format("GET", path)
end
"""


class Peer:
    def __init__(self, kind, binary, workdir):
        self.kind = kind
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        environment = dict(os.environ, HOME=workdir)
        if kind == "storesh serve":
            command = [binary, "serve", "--bucket", os.path.join(workdir, "bench.bucket"), "--name", BUCKET,
                       "--port", str(self.port), "--no-log", "--quiet"]
        else:
            # In memory: its fastest form (storesh serve makes every answered change durable).
            command = [os.path.join(os.path.dirname(sys.executable), "gcp-storage-emulator"), "start",
                       "--port", str(self.port), "--default-bucket", BUCKET, "--in-memory"]
        # Its log goes to a file: a pipe nobody reads fills up and stops a server that logs every request.
        self.log = open(os.path.join(workdir, "server.log"), "w")
        self.process = subprocess.Popen(command, stdout=self.log, stderr=self.log, env=environment)
        wait_for(self.port, self.process)

    def stop(self):
        stop_server(self.process, self.log)


def timed(work):
    start = time.perf_counter()
    result = work()
    return time.perf_counter() - start, result


def measure(peer, size, results):
    client = client_for(peer.url)
    bucket = client.bucket(BUCKET)
    names = [f"o/{index:05}" for index in range(size)]
    failures = []

    def each(work, items):
        """Runs `work` on every item, one at a time; stops after MAXIMUM_FAILURES failures (a stalled server)."""
        done = 0
        start = time.perf_counter()
        for item in items:
            try:
                work(item)
                done += 1
            except Exception as error:  # the peer's failures are results here, not crashes of the benchmark
                failures.append(f"{peer.kind}: {type(error).__name__}: {str(error)[:200]}")
                if len(failures) >= MAXIMUM_FAILURES:
                    break
        return done, time.perf_counter() - start

    done, seconds = each(lambda name: bucket.blob(name).upload_from_string(
        name.encode(), content_type="text/plain", timeout=CALL_TIMEOUT, retry=None), names)
    results[(peer.kind, size, "upload /s")] = done / seconds

    page_times = []
    listed = 0
    pages = 0
    iterator = client.list_blobs(BUCKET, prefix="o/", page_size=100, timeout=CALL_TIMEOUT).pages
    while True:
        start = time.perf_counter()
        page = next(iterator, None)
        if page is None:
            break
        count = sum(1 for _ in page)
        page_times.append(time.perf_counter() - start)
        listed += count
        pages += 1
    results[(peer.kind, size, "listed")] = listed
    results[(peer.kind, size, "list ms/page")] = statistics.median(page_times) * 1000
    results[(peer.kind, size, "list pages")] = pages

    def patch(name):
        blob = bucket.blob(name)
        blob.metadata = {"reviewed": "yes", "size": str(size)}
        blob.patch(timeout=CALL_TIMEOUT, retry=None)

    done, seconds = each(patch, names[:PATCHES])
    results[(peer.kind, size, "patch /s")] = done / seconds
    results[(peer.kind, size, "failures")] = len(failures)
    for failure in failures:
        print("  " + failure, file=sys.stderr)

    if shutil.which("wrk"):
        with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
            script.write(LOAD_SCRIPT)
        load = subprocess.run(
            ["wrk", "-t", "2", "-c", str(LOAD_CONNECTIONS), "-d", f"{LOAD_SECONDS}s", "--latency", "--timeout", "10s",
             "-s", script.name, peer.url],
            capture_output=True, text=True, env=dict(os.environ, BENCH_OBJECTS=str(size), BENCH_BUCKET=BUCKET))
        os.unlink(script.name)
        output = load.stdout
        rate = re.search(r"Requests/sec:\s+([\d.]+)", output)
        results[(peer.kind, size, "load req/s")] = float(rate.group(1)) if rate else 0.0
        for label, key in (("50%", "load p50 ms"), ("99%", "load p99 ms")):
            match = re.search(rf"{re.escape(label)}\s+([\d.]+)(us|ms|s)", output)
            if match:
                value = float(match.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[match.group(2)]
                results[(peer.kind, size, key)] = value
        non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
        socket_errors = re.search(r"Socket errors: (.*)", output)
        # Connect, read and write errors, and timeouts (requests not answered within 10 s).
        results[(peer.kind, size, "load errors")] = (int(non2xx.group(1)) if non2xx else 0) + (
            0 if not socket_errors else sum(int(n) for n in re.findall(r"\d+", socket_errors.group(1))))


def flushes_per_second(directory):
    """How many durable commits one after another the disk allows: the median of 200 write+fsync rounds."""
    path = os.path.join(directory, "flush-probe")
    times = []
    with open(path, "wb") as file:
        for _ in range(200):
            start = time.perf_counter()
            file.write(b"x" * 4096)
            file.flush()
            os.fsync(file.fileno())
            times.append(time.perf_counter() - start)
    os.unlink(path)
    return 1 / statistics.median(times)


def main():
    binary = sys.argv[1]
    sizes = [int(size) for size in sys.argv[2:]] or [1000, 10000]
    results = {}
    kinds = ["storesh serve", "gcp-storage-emulator"]
    if os.environ.get("BENCH_PEERS") == "storesh":
        kinds = kinds[:1]  # storesh serve alone (the peer takes most of the run's time)
    for kind in kinds:
        for size in sizes:
            # A fresh server and bucket for each size, so that a peer stalled by one load does not spoil the next.
            with tempfile.TemporaryDirectory() as workdir:
                print(f"  {kind}: {size} objects…", file=sys.stderr, flush=True)
                peer = Peer(kind, binary, workdir)
                try:
                    measure(peer, size, results)
                finally:
                    peer.stop()
                if kind == "storesh serve":
                    # The phases before the load send one change at a time, one commit each; the rest are the load's.
                    summary = re.search(r"stopped after (\d+) changes? in (\d+) commits?",
                                        open(os.path.join(workdir, "server.log")).read())
                    if summary:
                        one_by_one = size + min(size, PATCHES)
                        changes, commits = int(summary.group(1)) - one_by_one, int(summary.group(2)) - one_by_one
                        if commits > 0:
                            results[(kind, size, "load changes/commit")] = changes / commits
    metrics = ["upload /s", "listed", "list pages", "list ms/page", "patch /s", "failures", "load req/s", "load p50 ms",
               "load p99 ms", "load errors"]
    higher_is_better = {"upload /s", "patch /s", "load req/s"}
    print(f"  {'':14}{'':>8}  {'storesh serve':>14}  {'gcp-storage-emulator':>21}  {'ratio':>8}")
    for size in sizes:
        for metric in metrics:
            ours = results.get(("storesh serve", size, metric))
            theirs = results.get(("gcp-storage-emulator", size, metric))
            if ours is None:
                continue
            if theirs is None:
                print(f"  {metric:14}{size:>8}  {ours:>14.1f}")
                continue
            ratio = ""
            if metric not in ("listed", "list pages", "failures", "load errors") and ours and theirs:
                ratio = f"{(ours / theirs if metric in higher_is_better else theirs / ours):.1f}x"
            print(f"  {metric:14}{size:>8}  {ours:>14.1f}  {theirs:>21.1f}  {ratio:>8}")
    print("  (ratio: how many times better storesh serve is; list ms/page is the median time of one page of 100)")
    with tempfile.TemporaryDirectory(dir=".bench") as directory:
        flushes = flushes_per_second(directory)
    print(f"  this disk allows {flushes:.0f} flushes/s one after another")
    for size in sizes:
        load = results.get(("storesh serve", size, "load req/s"))
        shared = results.get(("storesh serve", size, "load changes/commit"))
        if load and shared:
            print(f"  storesh serve under load at {size}: {load / 4:.0f} patches/s answered durably, "
                  f"{shared:.1f} changes per commit")
    json.dump({"|".join(map(str, key)): value for key, value in results.items()},
              open(os.path.join(".bench", "serve.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
