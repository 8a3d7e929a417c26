"""Capture what Alertmanager hands its notification templates, from a real Alertmanager.

    .venv/bin/python tools/capture_alertmanager.py tests/fixtures/alertmanager-0.25

Starts Debian's prometheus-alertmanager on loopback with one webhook receiver, posts one alert
shaped as the generated SpecDecodeSliceRed (its labels on a slice, its annotations as written
in the rule file: Prometheus would fill their templates in), and saves the webhook's body:
Alertmanager's own serialization of the template data (receiver, status, alerts, common
labels and annotations) that `amtool template render --template.data` reads back.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import yaml
from specwatch.conventions import AlertName
from specwatch.upstream.child import free_port

ROOT = Path(__file__).resolve().parents[1]
SLICE = {"model": "sim-llama", "ctx_bucket": "0-512", "task": "code", "instance": "pod-a:9400"}


def red_alert() -> dict[str, object]:
    rules = yaml.safe_load((ROOT / "alerts" / "specwatch-alerts.rules.yml").read_text())
    (rule,) = [r for g in rules["groups"] for r in g["rules"]
               if r.get("alert") == AlertName.SLICE_RED]  # fmt: skip
    words = {k: rule["annotations"][k] for k in ("summary", "description", "runbook")}
    return {"labels": {"alertname": rule["alert"], **rule["labels"], **SLICE}, "annotations": words}


def capture(out: Path) -> None:
    bodies: list[bytes] = []

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    hook = HTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=hook.serve_forever, daemon=True).start()
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        config = {
            "route": {"receiver": "hook", "group_by": ["alertname"], "group_wait": "0s"},
            "receivers": [
                {
                    "name": "hook",
                    "webhook_configs": [{"url": f"http://127.0.0.1:{hook.server_port}/"}],
                }
            ],
        }
        (Path(tmp) / "am.yml").write_text(yaml.safe_dump(config))
        argv = ["prometheus-alertmanager", f"--config.file={tmp}/am.yml",
                f"--storage.path={tmp}/data", f"--web.listen-address=127.0.0.1:{port}",
                "--cluster.listen-address="]  # fmt: skip
        with subprocess.Popen(argv, stderr=subprocess.DEVNULL) as alertmanager:
            try:
                deadline = time.monotonic() + 60
                while not bodies:
                    if time.monotonic() > deadline:
                        raise SystemExit("no notification from Alertmanager within a minute")
                    with contextlib.suppress(OSError):  # not listening yet
                        urllib.request.urlopen(
                            urllib.request.Request(
                                f"http://127.0.0.1:{port}/api/v2/alerts",
                                data=json.dumps([red_alert()]).encode(),
                                headers={"Content-Type": "application/json"},
                            )
                        )
                    time.sleep(0.5)
            finally:
                alertmanager.terminate()
    hook.shutdown()
    version = subprocess.run(
        ["prometheus-alertmanager", "--version"], capture_output=True, text=True, check=True
    )
    out.mkdir(parents=True, exist_ok=True)
    (out / "webhook-red.json").write_bytes(bodies[0])
    (out / "VERSION").write_text((version.stdout or version.stderr).splitlines()[0] + "\n")


if __name__ == "__main__":
    capture(Path(sys.argv[1]))
