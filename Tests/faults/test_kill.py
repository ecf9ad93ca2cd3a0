"""kill -9 at random instants while scripts, single commands and snapshot commands commit.

After every kill the bucket must open, pass `storesh check`, and hold exactly the acknowledged changes:
the killed command's changes wholly or not at all, never half (a script of 201 changes is all or nothing),
and every change acknowledged before (exit 0) still there.

STORESH_FAULT_ROUNDS sets the number of rounds (scripts/test runs a short form; scripts/faults a long
one), STORESH_FAULT_SEED the seed of the random choices. The summary line counts kills, recoveries,
killed changes that had landed anyway, and lost changes (must be 0).
"""
import json
import os
import random
import signal
import time

from harness import check, export, make_bucket, start, storesh

ROUNDS = int(os.environ.get("STORESH_FAULT_ROUNDS", "30"))
SEED = int(os.environ.get("STORESH_FAULT_SEED", "1"))
OBJECTS = 200


def observe(home, bucket):
    """(round value on every k/ object, marker content): the round values must all be equal."""
    objects = export(home, bucket)
    rounds = {entry.get("customMetadata", {}).get("round") for name, entry in objects.items() if name.startswith("k/0")}
    assert len(rounds) == 1, f"half-applied change: k/ objects carry rounds {sorted(map(str, rounds))}"
    return rounds.pop(), objects["k/marker"].get("text")


def snapshot_names(home, bucket):
    status, out, err = storesh(home, "--bucket", bucket, "--json", "-c", "snapshot list")
    assert status == 0, err
    return {entry["name"] for entry in json.loads(out)["snapshots"]}


def test_kill_at_random_instants(tmp_path):
    generator = random.Random(SEED)
    objects = [{"name": f"k/{i:04d}", "customMetadata": {"round": "0"}} for i in range(OBJECTS)]
    bucket = make_bucket(tmp_path, "kill", objects + [{"name": "k/marker", "text": "0"}])
    script = tmp_path / "round.store"
    state = ("0", "0")
    snapshots = {}
    durations = {}
    counts = {"rounds": 0, "kills": 0, "recoveries": 0, "landed_though_killed": 0, "lost": 0, "acknowledged": 0}

    for round_number in range(1, ROUNDS + 1):
        value = str(round_number)
        kind = generator.choice(["script", "script", "meta", "put", "snapshot save", "snapshot restore"])
        if kind == "snapshot restore" and not snapshots:
            kind = "snapshot save"
        if kind == "script":
            script.write_text(f"meta set custom.round={value} -- k/0*\nput --data {value} k/marker\n")
            arguments, after = ["run", str(script)], (value, value)
        elif kind == "meta":
            arguments, after = ["-c", f"meta set custom.round={value} -- k/0*"], (value, state[1])
        elif kind == "put":
            arguments, after = ["-c", f"put --data {value} k/marker"], (state[0], value)
        elif kind == "snapshot save":
            arguments, after = ["-c", f"snapshot save s{value}"], state
        else:
            name = generator.choice(sorted(snapshots))
            arguments, after = ["-c", f"snapshot restore {name}"], snapshots[name]

        # Kill somewhere in the command's life, start-up and commit included: up to 1.3 times as long as
        # this kind of command took when it was last left alone.
        expected = durations.get(kind)
        kill_after = None if expected is None or generator.random() < 0.15 else generator.uniform(0, expected * 1.3)
        began = time.monotonic()
        process = start(tmp_path, "--bucket", bucket, *arguments)
        if kill_after is not None:
            try:
                process.wait(timeout=kill_after)
            except Exception:
                process.send_signal(signal.SIGKILL)
        _, err = process.communicate(timeout=120)
        killed = process.returncode == -signal.SIGKILL
        if not killed:
            assert process.returncode == 0, f"round {round_number} ({kind}) failed: {err.decode()}"
            durations[kind] = time.monotonic() - began

        observed = observe(tmp_path, bucket)
        counts["rounds"] += 1
        if killed:
            counts["kills"] += 1
            status, report = check(tmp_path, bucket)
            assert status == 0 and report["sound"], f"round {round_number}: not sound after kill -9: {report}"
            counts["recoveries"] += 1
            assert observed in (state, after), \
                f"round {round_number} ({kind}) killed: bucket holds {observed}, expected {state} or {after}"
            if observed != state and observed == after:
                counts["landed_though_killed"] += 1
        else:
            counts["acknowledged"] += 1
            if observed != after:
                counts["lost"] += 1
            assert observed == after, f"round {round_number} ({kind}) acknowledged but bucket holds {observed}"
        state = observed
        if kind == "snapshot save":
            present = f"s{value}" in snapshot_names(tmp_path, bucket)
            assert present or killed, f"round {round_number}: acknowledged snapshot s{value} is missing"
            if present:
                snapshots[f"s{value}"] = state

    status, report = check(tmp_path, bucket)
    assert status == 0 and report["sound"], report
    summary = " ".join(f"{key}={value}" for key, value in counts.items())
    print(f"\nkill -9 faults (seed {SEED}): {summary}")
    if os.environ.get("STORESH_FAULT_REPORT"):
        with open(os.environ["STORESH_FAULT_REPORT"], "a") as file:
            file.write(json.dumps({"test": "kill", "seed": SEED, **counts}) + "\n")
    assert counts["lost"] == 0
    assert counts["kills"] > 0
