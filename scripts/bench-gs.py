"""The `gs` section of scripts/bench: a bulk metadata edit on a gs:// bucket, storesh against the official Python
client (google-cloud-storage), side by side in one run, on the same `storesh serve` (release build):

- updating two properties (cacheControl and one custom key) on 10,000 objects: storesh's script (plan, journal,
  parallel apply with preconditions, all included) against the client's `blob.patch()` from a pool of 16 threads
  and from a sequential loop (what `gsutil setmeta` does, an object at a time);
- listing a folder of 100,000 objects: `storesh ls --all` against the client's `list_blobs`.

Each run sets a value of its own, so that every run changes every object. Prints medians and ratios; never a test.

    .venv/bin/python scripts/bench-gs.py STORESH_BINARY [OBJECTS] [LISTED] [LATENCY_OBJECTS]

A third part repeats the bulk edit on LATENCY_OBJECTS objects (default 1,000) on a server that waits 20 ms before
every answer (`storesh serve --latency 20`), as a round trip to a real bucket does: there a sequential loop waits for
each round trip, and the ratios are those of parallelism rather than of CPU.
"""
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

RUNS = 3


def serve(binary, home, bucket_file, latency_ms=0):
    process = subprocess.Popen([binary, "serve", "--bucket", bucket_file, "--port", "0", "--no-log",
                                "--latency", str(latency_ms)],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=dict(os.environ, HOME=home))
    line = process.stdout.readline().decode()
    match = re.search(r"at (http://127\.0\.0\.1:\d+)", line)
    if not match:
        raise SystemExit("storesh serve did not start: " + line)
    return process, match.group(1)


def make_bucket(binary, home, path, names):
    archive = os.path.join(home, "archive.json")
    with open(archive, "w") as file:
        json.dump({"format": "storesh-bucket", "version": 1,
                   "objects": [{"name": name, "text": "x", "contentType": "image/jpeg"} for name in names]}, file)
    subprocess.run([binary, "import", "--bucket", path, archive], check=True, stderr=subprocess.DEVNULL,
                   env=dict(os.environ, HOME=home))


def client_for(url):
    os.environ["STORAGE_EMULATOR_HOST"] = url
    os.environ["DISABLE_GCS_PYTHON_CLIENT_OTEL_BUCKET_METADATA"] = "true"
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage
    import requests.adapters
    client = storage.Client(project="bench", credentials=AnonymousCredentials())
    # Enough pooled connections for 16 threads (the default pool keeps 10).
    adapter = requests.adapters.HTTPAdapter(pool_connections=32, pool_maxsize=32)
    client._http.mount("http://", adapter)
    return client


def timed(body, cpu=None):
    """Wall time of body(); with `cpu`, also appends the client's CPU time (this process's and its children's)."""
    start = time.perf_counter()
    before = time.process_time(), resource.getrusage(resource.RUSAGE_CHILDREN)
    body()
    wall = time.perf_counter() - start
    if cpu is not None:
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(time.process_time() - before[0] + (children.ru_utime - before[1].ru_utime)
                   + (children.ru_stime - before[1].ru_stime))
    return wall


def bulk_edit(binary, env, url, name, client, objects, runs, tag, parallel=None):
    """The three contestants on `objects` objects under photos/, `runs` times; wall and client CPU times."""
    times = {"storesh": [], "python, 16 threads": [], "python, sequential loop": []}
    cpu = {label: [] for label in times}
    bucket = client.bucket(name)
    for run in range(runs):
        value = f"{tag}-{run}"

        def storesh():
            done = subprocess.run(
                [binary, "--bucket", f"gs://{name}", "--quiet", *(["--parallel", str(parallel)] if parallel else []), "-c",
                 f'meta set cacheControl="public, max-age={run}" custom.reviewed=storesh-{value} -- photos/**'],
                env=dict(env, STORAGE_EMULATOR_HOST=url), capture_output=True)
            assert done.returncode == 0, done.stderr.decode()

        def patch(blob, who):
            blob.cache_control = f"public, max-age={run}"
            blob.metadata = {"reviewed": f"{who}-{value}"}
            blob.patch()

        def threads():
            blobs = list(client.list_blobs(bucket, prefix="photos/"))
            with ThreadPoolExecutor(16) as pool:
                list(pool.map(lambda blob: patch(blob, "threads"), blobs))

        def sequential():
            for blob in client.list_blobs(bucket, prefix="photos/"):
                patch(blob, "loop")

        times["storesh"].append(timed(storesh, cpu["storesh"]))
        times["python, 16 threads"].append(timed(threads, cpu["python, 16 threads"]))
        times["python, sequential loop"].append(timed(sequential, cpu["python, sequential loop"]))
        print(f"  run {run + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()), flush=True)
    check = bucket.get_blob("photos/000007.jpg")
    assert check.metadata == {"reviewed": f"loop-{tag}-{runs - 1}"}, check.metadata
    ours = statistics.median(times["storesh"])
    for label, values in times.items():
        median = statistics.median(values)
        ratio = "" if label == "storesh" else f"   storesh is {median / ours:.1f}x faster"
        print(f"  {label:26} {median:7.2f} s  {objects / median:8.0f} objects/s  client CPU {statistics.median(cpu[label]):6.2f} s{ratio}")


def main():
    binary = os.path.abspath(sys.argv[1])
    objects = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
    listed = int(sys.argv[3]) if len(sys.argv) > 3 else 100_000
    latency_objects = int(sys.argv[4]) if len(sys.argv) > 4 else 1_000
    home = tempfile.mkdtemp(prefix="bench-gs-")
    env = dict(os.environ, HOME=home, XDG_STATE_HOME=os.path.join(home, "state"))

    bucket_file = os.path.join(home, "edit.bucket")
    make_bucket(binary, home, bucket_file, [f"photos/{i:06}.jpg" for i in range(objects)])
    process, url = serve(binary, home, bucket_file)
    client = client_for(url)
    try:
        # storesh serve names its bucket after the file's; the client must use that name.
        name = json.loads(subprocess.run([binary, "--bucket", bucket_file, "--json", "-c", "pwd"], capture_output=True,
                                         env=env).stdout)["path"].split("/")[2]
        print(f"== updating cacheControl and one custom key on {objects:,} objects (median of {RUNS})")
        bulk_edit(binary, env, url, name, client, objects, RUNS, "run")
    finally:
        process.terminate()
        process.wait()

    latency_file = os.path.join(home, "latency.bucket")
    make_bucket(binary, home, latency_file, [f"photos/{i:06}.jpg" for i in range(latency_objects)])
    # The server waits 20 ms before each answer (holding no thread), as a round trip to a real bucket takes.
    process, url = serve(binary, home, latency_file, latency_ms=20)
    try:
        client = client_for(url)
        name = json.loads(subprocess.run([binary, "--bucket", latency_file, "--json", "-c", "pwd"], capture_output=True,
                                         env=env).stdout)["path"].split("/")[2]
        print(f"== the same on {latency_objects:,} objects with 20 ms added to every request (median of {RUNS})")
        bulk_edit(binary, env, url, name, client, latency_objects, RUNS, "latency")
        print(f"== the same, storesh with --parallel 64 (median of {RUNS})")
        bulk_edit(binary, env, url, name, client, latency_objects, RUNS, "latency64", parallel=64)
    finally:
        process.terminate()
        process.wait()

    list_file = os.path.join(home, "list.bucket")
    make_bucket(binary, home, list_file, [f"folder/{i:07}" for i in range(listed)])
    process, url = serve(binary, home, list_file)
    client = client_for(url)
    name = json.loads(subprocess.run([binary, "--bucket", list_file, "--json", "-c", "pwd"], capture_output=True,
                                     env=env).stdout)["path"].split("/")[2]
    listing = {"storesh ls --all": [], "python list_blobs": []}
    listing_cpu = {label: [] for label in listing}
    try:
        for _ in range(RUNS):
            def storesh_list():
                done = subprocess.run([binary, "--bucket", f"gs://{name}", "--quiet", "--json", "-c", "ls --all folder"],
                                      env=dict(env, STORAGE_EMULATOR_HOST=url), capture_output=True)
                assert done.returncode == 0 and len(json.loads(done.stdout)["items"]) == listed, done.stderr.decode()

            def python_list():
                count = sum(1 for _ in client.list_blobs(client.bucket(name), prefix="folder/", delimiter="/"))
                assert count == listed

            listing["storesh ls --all"].append(timed(storesh_list, listing_cpu["storesh ls --all"]))
            listing["python list_blobs"].append(timed(python_list, listing_cpu["python list_blobs"]))
    finally:
        process.terminate()
        process.wait()
    print(f"== listing a folder of {listed:,} objects, every page (median of {RUNS})")
    ours = statistics.median(listing["storesh ls --all"])
    for label, values in listing.items():
        median = statistics.median(values)
        ratio = "" if label.startswith("storesh") else f"   storesh is {median / ours:.1f}x faster"
        print(f"  {label:26} {median:7.2f} s  client CPU {statistics.median(listing_cpu[label]):6.2f} s{ratio}")


if __name__ == "__main__":
    main()
