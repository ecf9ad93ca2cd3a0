"""The lesson pack (samples/lessons): each lesson, run as the README says on a fresh default bucket, gives its
committed transcript byte for byte (commands after their prompt, output and errors in order)."""
import glob
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "faults"))
import harness  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LESSONS = sorted(glob.glob(os.path.join(ROOT, "samples", "lessons", "*.store")))


def test_there_is_a_lesson_for_each_concept_of_the_docs():
    names = [os.path.basename(path) for path in LESSONS]
    assert names == ["01-prefixes-and-items.store", "02-hidden-names.store", "03-list-all.store",
                     "04-pages-and-tokens.store", "05-get-metadata.store", "06-update-metadata.store",
                     "07-delete-a-property.store", "08-custom-metadata.store", "09-rules-version-1.store",
                     "10-versions-and-soft-delete.store"]


@pytest.mark.parametrize("lesson", LESSONS, ids=os.path.basename)
def test_each_lesson_gives_its_transcript_byte_for_byte(lesson, tmp_path):
    relative = os.path.relpath(lesson, ROOT)
    done = subprocess.run(
        [harness.BINARY, "--quiet", "run", "--echo", "--keep-going", "--clock", "2026-11-21T09:30:00Z", relative],
        cwd=ROOT, env=harness.environment(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
    with open(lesson[:-len(".store")] + ".transcript", "rb") as committed:
        expected = committed.read()
    assert done.stdout.decode() == expected.decode()
    assert done.returncode in (0, 1)  # 1: a lesson that shows an error on purpose
