"""Ctrl-C during `kreg verify`: it stops at once (exit 130) instead of running every queued variant,
kills its running children, keeps what was decided (in the JSON and the store) and says the run is
not complete."""
import json
import os
import signal
import subprocess
import time

from kreg.registry.store import Store


def test_ctrl_c_stops_at_once_and_keeps_what_was_decided(tmp_path):
    env = dict(os.environ, KREG_HOME=str(tmp_path))
    # Ctrl-C live as in a terminal, also where this test runs with SIGINT ignored (a background job without
    # job control: the child would inherit SIG_IGN, and Python then installs no KeyboardInterrupt handler)
    p = subprocess.Popen(["kreg", "verify", "--op", "add", "--op", "argmax", "--op", "rms_norm", "--json"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines = []
    while not any(": safe" in ln or ": unsafe" in ln for ln in lines):     # one variant decided
        lines.append(p.stderr.readline())
        assert lines[-1] or p.poll() is None, "".join(lines)
    kids = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True).stdout.split()
    p.send_signal(signal.SIGINT)
    t = time.monotonic()
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130 and time.monotonic() - t < 20, err[-2000:]
    assert "interrupted" in err
    report = json.loads(out)
    assert report["complete"] is False and 1 <= len(report["variants"]) < 12
    stored = {r["name"] for r in Store(tmp_path / "results.sqlite").query(stage="verdict")}
    assert {r["name"] for r in report["variants"] if r["complete"]} <= stored
    time.sleep(1)
    for k in kids:       # no child outlives the run
        state = subprocess.run(["ps", "-o", "stat=", "-p", k], capture_output=True, text=True).stdout.strip()
        assert state == "" or state.startswith("Z"), f"child {k} still running ({state})"
