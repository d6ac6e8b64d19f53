"""What the Python benchmark drivers share: a free loopback port, tide's REST calls with an
optional bearer token, polling for a condition with a deadline, and stopping the daemons a
driver started.

  sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
  from tide_bench import free_port, get, post, poll, stop_all
"""
import json
import os
import signal
import socket
import subprocess
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, token=None):
    headers = {"Authorization": "Bearer " + token} if token else {}
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=5) as r:
        return json.loads(r.read())


def post(url, body, token):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json",
                                          "Authorization": "Bearer " + token})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def poll(what, check, timeout, interval):
    """check()'s first true value, tried every `interval` s; an exception counts as not yet (a
    daemon not up yet, or down for a fault). RuntimeError after `timeout` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = check()
            if value:
                return value
        except Exception:  # not up yet, or down for the fault
            pass
        time.sleep(interval)
    raise RuntimeError("timed out waiting for " + what)


def stop_all(procs):
    """SIGTERM to the process group of each of `procs` (subprocess.Popen started with
    start_new_session), newest first; SIGKILL to those still there after 20 s."""
    for p in reversed(procs):
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    for p in reversed(procs):
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
