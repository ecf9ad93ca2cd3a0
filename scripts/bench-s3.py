"""The `s3` section of scripts/bench: a bulk metadata edit on an s3:// bucket, side by side in one run on the same
moto_server (release build of storesh):

- storesh's script (plan, journal, parallel apply, each update a HEAD and a guarded copy onto itself);
- boto3 from a pool of 8 threads, each object a head_object and a copy_object with REPLACE that sends back every
  property it read (so that, like storesh, it keeps them);
- a loop of `aws s3api copy-object --metadata-directive REPLACE`, one process per object, as a shell script does
  it (which keeps nothing it does not resend: here it resends the other properties too, read once beforehand).

Each run sets contentType and one custom key to values of its own, so that every run changes every object; every
object also carries cacheControl and a custom key that must survive. The awscli loop starts a Python process per
object (about half a second each), so it runs on LOOP_OBJECTS of the objects and its rate is reported per object,
with the time it would take for all of them. Prints medians and ratios; never a test.

    .venv/bin/python scripts/bench-s3.py STORESH_BINARY [OBJECTS] [LOOP_OBJECTS]
"""
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor


RUNS = 3
BUCKET = "bench-media"
VENV_BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".venv", "bin")


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_moto(home):
    port = free_port()
    log = open(os.path.join(home, "moto.log"), "wb")
    process = subprocess.Popen([os.path.join(VENV_BIN, "moto_server"), "-H", "127.0.0.1", "-p", str(port)],
                               stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    import requests
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            requests.get(url + "/moto-api/", timeout=1)
            return process, url
        except requests.ConnectionError:
            time.sleep(0.05)
    process.kill()
    raise SystemExit("moto_server did not start")


def timed(body, cpu):
    """Wall time of body(); appends the client's CPU time (this process's and its children's) to `cpu`."""
    import resource
    start = time.perf_counter()
    before = time.process_time(), resource.getrusage(resource.RUSAGE_CHILDREN)
    body()
    wall = time.perf_counter() - start
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu.append(time.process_time() - before[0] + (children.ru_utime - before[1].ru_utime)
               + (children.ru_stime - before[1].ru_stime))
    return wall


def main():
    binary = os.path.abspath(sys.argv[1])
    objects = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000
    loop_objects = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    aws = shutil.which("aws")
    home = tempfile.mkdtemp(prefix="bench-s3-")
    process, url = start_moto(home)
    credentials = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench-secret", "AWS_REGION": "us-east-1",
                   "AWS_ENDPOINT_URL": url}
    env = dict(os.environ, HOME=home, XDG_STATE_HOME=os.path.join(home, "state"), **credentials)
    import boto3
    from botocore.config import Config
    client = boto3.client("s3", endpoint_url=url, region_name="us-east-1", aws_access_key_id="bench",
                          aws_secret_access_key="bench-secret", config=Config(max_pool_connections=32))
    try:
        client.create_bucket(Bucket=BUCKET)
        names = [f"photos/{i:05}.jpg" for i in range(objects)]
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda name: client.put_object(
                Bucket=BUCKET, Key=name, Body=b"x", ContentType="image/jpeg", CacheControl="public, max-age=600",
                Metadata={"owner": "ada"}), names))
        times = {"storesh": [], "boto3, 8 threads": []}
        cpu = {label: [] for label in times}
        loop_times, loop_cpu = [], []

        def check(name, content_type, reviewed):
            head = client.head_object(Bucket=BUCKET, Key=name)
            assert head["ContentType"] == content_type, head["ContentType"]
            assert head["CacheControl"] == "public, max-age=600", head.get("CacheControl")
            assert head["Metadata"] == {"owner": "ada", "reviewed": reviewed}, head["Metadata"]

        for run in range(RUNS):
            content_type = "image/png" if run % 2 == 0 else "image/webp"

            def storesh():
                done = subprocess.run(
                    [binary, "--bucket", f"s3://{BUCKET}", "--quiet", "-c",
                     f"meta set contentType={content_type} custom.reviewed=storesh-{run} -- photos/**"],
                    env=env, capture_output=True)
                assert done.returncode == 0, done.stderr.decode()

            def update(name, who):
                head = client.head_object(Bucket=BUCKET, Key=name)
                client.copy_object(
                    Bucket=BUCKET, Key=name, CopySource={"Bucket": BUCKET, "Key": name}, MetadataDirective="REPLACE",
                    CopySourceIfMatch=head["ETag"], ContentType=content_type, CacheControl=head["CacheControl"],
                    Metadata=dict(head["Metadata"], reviewed=f"{who}-{run}"))

            def threads():
                listed = [entry["Key"] for page in client.get_paginator("list_objects_v2").paginate(
                    Bucket=BUCKET, Prefix="photos/") for entry in page.get("Contents", [])]
                with ThreadPoolExecutor(8) as pool:
                    list(pool.map(lambda name: update(name, "boto3"), listed))

            def loop():
                for name in names[:loop_objects]:
                    subprocess.run(
                        [aws, "s3api", "copy-object", "--bucket", BUCKET, "--key", name, "--copy-source",
                         f"{BUCKET}/{name}", "--metadata-directive", "REPLACE", "--content-type", content_type,
                         "--cache-control", "public, max-age=600", "--metadata", f"owner=ada,reviewed=awscli-{run}"],
                        env=env, check=True, capture_output=True)

            times["storesh"].append(timed(storesh, cpu["storesh"]))
            check(names[7], content_type, f"storesh-{run}")
            times["boto3, 8 threads"].append(timed(threads, cpu["boto3, 8 threads"]))
            check(names[7], content_type, f"boto3-{run}")
            if aws:
                loop_times.append(timed(loop, loop_cpu))
                check(names[7], content_type, f"awscli-{run}")
            print(f"  run {run + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items())
                  + (f", awscli loop {loop_times[-1]:.2f} s for {loop_objects}" if aws else ""), flush=True)
    finally:
        process.terminate()
        process.wait()
    ours = statistics.median(times["storesh"])
    print(f"== contentType and one custom key on {objects:,} objects (median of {RUNS})")
    for label, values in times.items():
        median = statistics.median(values)
        ratio = "" if label == "storesh" else f"   storesh is {median / ours:.1f}x faster"
        print(f"  {label:26} {median:7.2f} s  {objects / median:7.0f} objects/s  client CPU {statistics.median(cpu[label]):6.2f} s{ratio}")
    if aws:
        per_object = statistics.median(loop_times) / loop_objects
        print(f"  {'aws s3api loop':26} {per_object * objects:7.2f} s  {1 / per_object:7.1f} objects/s  "
              f"(measured on {loop_objects} objects: {statistics.median(loop_times):.2f} s)   storesh is "
              f"{per_object * objects / ours:.0f}x faster")
    else:
        print("  aws s3api loop: awscli is not installed here; skipped")


if __name__ == "__main__":
    main()
