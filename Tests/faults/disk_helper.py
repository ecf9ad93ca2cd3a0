"""Run inside a private mount namespace by test_disk.py: mounts a small tmpfs, puts a bucket on it, fills
the disk, then makes it read-only, running storesh at each step. Prints one JSON document of what happened."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from harness import check, digest, export, storesh, teaching_bucket  # noqa: E402

home, mount = sys.argv[1], sys.argv[2]
os.makedirs(mount, exist_ok=True)
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mount], check=True)


class Home(str):
    def __truediv__(self, name):
        return type(self)(os.path.join(self, name))

    def write_text(self, text):
        open(self, "w").write(text)


bucket = teaching_bucket(Home(mount), "b")
results = {"before": export(home, bucket)}
big = os.path.join(home, "big")
open(big, "wb").write(os.urandom(3 * 1024 * 1024))


def attempt(name, *arguments, then=None):
    status, out, err = storesh(home, "--bucket", bucket, *arguments)
    if then:
        then()
    results[name] = {"status": status, "stderr": err.decode(), "export": export(home, bucket),
                     "check": check(home, bucket)}


attempt("put too big", "-c", "put " + big + " big")
script = os.path.join(home, "fill.store")
open(script, "w").write("".join(f"put --data {'x' * 2000} many/{i:04d}\n" for i in range(1000)))
attempt("script too big", "run", script)
# Leave no room at all, then try a small change.
filler = os.path.join(mount, "filler")
subprocess.run(["dd", "if=/dev/zero", "of=" + filler, "bs=4k"], capture_output=True)
# The bucket is read back once there is room again: on a full disk SQLite cannot even make the
# shared-memory file it reads through.
attempt("meta set on a full disk", "-c", "meta set custom.k=v -- images/forest.jpg", then=lambda: os.unlink(filler))
storesh(home, "--bucket", bucket, "-c", "ls")  # folds in what the log holds, while it can
subprocess.run(["mount", "-o", "remount,ro", mount], check=True)
results["digest read-only"] = digest(bucket)
attempt("put on read-only", "-c", "put --data x new")
status, out, err = storesh(home, "--bucket", bucket, "-c", "cat docs/readme.md")
results["cat on read-only"] = {"status": status, "stdout": out.decode(), "stderr": err.decode()}
results["digest after"] = digest(bucket)
print(json.dumps(results))
