"""The `limits` section of scripts/bench (rules Q1–Q3): a bulk metadata edit on gs:// at the service's limits, side
by side in one run on the same `storesh serve` (release build).

- **Against gsutil.** `meta set cacheControl=no-cache custom.k=V -- users/**` by storesh (batches of 100; and each
  change alone, `--batch 1`) against `gsutil -m setmeta -h Cache-Control:no-cache -h x-goog-meta-k:V
  gs://B/users/**` (PyPI's gsutil, through a TLS proxy of the tests' own, as it only speaks HTTPS), on SIZES
  objects, at each of LATENCIES milliseconds of `serve --latency`. Each run sets a value of its own, so every run
  changes every object. Wall time (start to exit, listing included), objects a second, the ratio to gsutil, and
  peak RSS (`/usr/bin/time -f %M`; gsutil's is its largest process).
- **Against a write rate.** MILLION objects edited against `serve --write-rate 1000`: throughput held (objects a
  second over the whole edit, and its share of the 1,000), the calls answered 429 (from `--trace`), failed changes,
  peak RSS.

    .venv/bin/python scripts/bench-limits.py STORESH [SIZES=10000,100000] [LATENCIES=0,20,50] [MILLION=1000000]

Prints its figures; never a test. SIZES or MILLION of 0 skips that part.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time

REPOSITORY = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(REPOSITORY, "Tests", "server"))
import tls_proxy  # noqa: E402  (the tests' TLS proxy)

GSUTIL = os.path.join(REPOSITORY, ".venv", "bin", "gsutil")
BUCKET = "bench.appspot.com"


def serve(binary, home, bucket_file, *options):
    process = subprocess.Popen([binary, "serve", "--bucket", bucket_file, "--port", "0", "--no-log", "--no-config", *options],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=dict(os.environ, HOME=home))
    match = re.search(r"at (http://127\.0\.0\.1:\d+)", process.stdout.readline().decode())
    if not match:
        raise SystemExit("storesh serve did not start")
    return process, match.group(1)


def make_bucket(binary, home, count):
    path = os.path.join(home, f"{BUCKET}.bucket")
    for leftover in [path, path + "-wal", path + "-shm"]:
        if os.path.exists(leftover):
            os.remove(leftover)
    archive = os.path.join(home, "archive.json")
    with open(archive, "w") as file:
        file.write('{"format": "storesh-bucket", "version": 1, "objects": [')
        for i in range(count):
            file.write(("," if i else "") + json.dumps({"name": f"users/u{i:07}/p.jpg", "text": "x", "contentType": "image/jpeg"}))
        file.write("]}")
    subprocess.run([binary, "import", "--quiet", "--bucket", path, archive], check=True, env=dict(os.environ, HOME=home))
    os.remove(archive)
    return path


def measured(command, env):
    """Runs a command to its end: (seconds, peak RSS in MiB, exit status, standard error)."""
    with tempfile.NamedTemporaryFile() as peak:
        started = time.monotonic()
        done = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", peak.name, *command], env=env, capture_output=True)
        seconds = time.monotonic() - started
        rss = int(open(peak.name).read().split()[-1]) / 1024
    return seconds, rss, done.returncode, done.stderr.decode(errors="replace")


def gsutil_command(home, port):
    options = ["Credentials:gs_json_host=127.0.0.1", f"Credentials:gs_json_port={port}", "Credentials:gs_host=127.0.0.1",
               f"Credentials:gs_port={port}", "Boto:https_validate_certificates=False", "GSUtil:default_project_id=bench",
               "GSUtil:prefer_api=json", "GSUtil:software_update_check_period=0", f"GSUtil:state_dir={home}/gsutil-state"]
    command = [GSUTIL]
    for option in options:
        command += ["-o", option]
    return command


def storesh_edit(binary, home, url, value, *options):
    env = dict(os.environ, HOME=home, STORAGE_EMULATOR_HOST=url, XDG_STATE_HOME=os.path.join(home, "state"))
    return measured([binary, "--bucket", f"gs://{BUCKET}", "--quiet", *options, "-c",
                     f"meta set cacheControl=no-cache custom.k={value} -- users/**"], env)


def against_gsutil(binary, home, sizes, latencies):
    certificate = tls_proxy.self_signed_certificate(__import__("pathlib").Path(home))
    gsutil_env = {"HOME": home, "PATH": os.path.dirname(GSUTIL) + ":/usr/bin:/bin", "LANG": "C.UTF-8", "BOTO_CONFIG": "/dev/null"}
    print("gs:// bulk edit, storesh against gsutil -m setmeta on the same served bucket (objects a second; peak RSS)")
    for size in sizes:
        bucket_file = make_bucket(binary, home, size)
        for latency in latencies:
            process, url = serve(binary, home, bucket_file, "--latency", str(latency))
            proxy = tls_proxy.TlsProxy(int(url.rsplit(":", 1)[1]), *certificate)
            results = {}
            for name, run in [
                ("storesh", lambda value: storesh_edit(binary, home, url, value)),
                ("storesh --batch 1", lambda value: storesh_edit(binary, home, url, value, "--batch", "1")),
                ("gsutil -m setmeta", lambda value: measured(
                    gsutil_command(home, proxy.port) + ["-m", "setmeta", "-h", "Cache-Control:no-cache", "-h",
                                                        f"x-goog-meta-k:{value}", f"gs://{BUCKET}/users/**"], gsutil_env)),
            ]:
                seconds, rss, status, err = run(f"v{time.time_ns()}")
                if status != 0:
                    print(f"  {name} failed ({status}): {err[-400:]}")
                results[name] = (seconds, rss)
            proxy.stop()
            process.terminate()
            process.wait()
            gsutil_seconds = results["gsutil -m setmeta"][0]
            for name, (seconds, rss) in results.items():
                print(f"  {size:>9,} objects, {latency:>2} ms: {name:<18} {seconds:8.1f} s {size / seconds:9,.0f}/s "
                      f"{gsutil_seconds / seconds:6.1f}x gsutil   {rss:6.0f} MiB")


def against_a_write_rate(binary, home, count, rate=1000):
    print(f"gs:// bulk edit of {count:,} objects against storesh serve --write-rate {rate}")
    bucket_file = make_bucket(binary, home, count)
    process, url = serve(binary, home, bucket_file, "--write-rate", str(rate))
    journal = os.path.join(home, "rate.journal")
    seconds, rss, status, err = storesh_edit(binary, home, url, f"r{time.time_ns()}", "--trace", "--journal", journal)
    process.terminate()
    process.wait()
    refused = sum(int(n) for n in re.findall(r"answers: [^\n]*?429 ×(\d+)", err))
    failed = sum(1 for line in open(journal) if line.startswith('{"failed"'))
    applied = sum(1 for line in open(journal) if line.startswith('{"applied"'))
    print(f"  exit {status}: {applied:,} applied, {failed} failed, {refused:,} calls answered 429 and sent again")
    print(f"  {seconds:.0f} s: {count / seconds:,.0f} objects a second, {count / seconds / rate:.0%} of the rate; peak RSS {rss:.0f} MiB")


def main():
    binary = os.path.abspath(sys.argv[1])
    sizes = [int(n) for n in (sys.argv[2] if len(sys.argv) > 2 else "10000,100000").split(",") if int(n) > 0]
    latencies = [int(n) for n in (sys.argv[3] if len(sys.argv) > 3 else "0,20,50").split(",")]
    million = int(sys.argv[4]) if len(sys.argv) > 4 else 1_000_000
    with tempfile.TemporaryDirectory(prefix="storesh-bench-limits-") as home:
        if sizes:
            against_gsutil(binary, home, sizes, latencies)
        if million:
            against_a_write_rate(binary, home, million)


if __name__ == "__main__":
    main()
