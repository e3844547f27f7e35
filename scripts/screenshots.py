"""The README's screenshots, refreshed in one command on the demo's fabric (`make demo`'s faults):

    .venv/bin/python scripts/screenshots.py [--out docs/screenshots] [--settle 180]

It starts runfabric as `make demo` does (64 simulated nodes, the switch fabric, DEMO_FAULTS read from the
Makefile, cn064's agent stopped, a private Redis) on a throwaway SQLite database, waits until the problems
show and the charts have some minutes of samples, then takes the pages in Debian's Chromium (Playwright):
overview, port (its charts from the first poll), node, the GPU server's matrix (gpu-node), events, jobs (of its
private Slurm, as `make demo`'s) (1400 px wide), the wall at 2560x1440 and 3840x2160, and the
overview on a 390 px phone in the dark theme (down to its third problem). The PNGs are re-deflated (zlib
level 9), and quantised with pngquant when it is installed. A console error on any page fails the run.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from harness import free_port, wait_for  # noqa: E402

PY = str(REPO / ".venv" / "bin" / "python") if (REPO / ".venv" / "bin" / "python").exists() else sys.executable
CHROMIUM = "/usr/bin/chromium"  # Debian's, as the browser tests
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
# The pages and what each shows of the demo's faults.
PORT_PAGE = "/ports/cn008/mlx5_1/1/"  # symbol errors rising: the grouped error charts draw something
NODE_PAGE = "/nodes/cn002/"  # a host port trained at SDR
GPU_NODE_PAGE = "/nodes/cn012/"  # the demo's GPU server (cn012:dgx in DEMO_FAULTS): its GPU x card matrix
SHOTS = ("overview", "port", "node", "gpu-node", "events", "jobs", "wall", "wall-4k", "phone")
WAIT_FOR = ("cn005", "cn006", "cn009", "cn064")  # down, flapping, PCIe, stale: the problem list is complete


def demo_faults() -> list[str]:
    """DEMO_FAULTS as the Makefile sets it (its continuation lines joined)."""
    text = (REPO / "Makefile").read_text().replace("\\\n", " ")
    found = re.search(r"^DEMO_FAULTS \?=(.*)$", text, re.M)
    if found is None:
        raise SystemExit("no DEMO_FAULTS in the Makefile")
    return found[1].split()


def start_fabric(scratch: Path, web: str) -> tuple[subprocess.Popen, str]:
    """runfabric as `make demo` starts it; returns the process and the operator's password it printed."""
    env = {**os.environ, "DEBUG": "1", "LOG_LEVEL": "WARNING", "DATABASE_URL": f"sqlite:///{scratch / 'db.sqlite3'}"}
    env.pop("REDIS_URL", None)
    manage = [PY, "manage.py"]
    subprocess.run([*manage, "migrate", "--noinput", "-v", "0"], env=env, cwd=REPO, check=True)
    subprocess.run([*manage, "import_policies", "scripts/demo-policies.yaml"], env=env, cwd=REPO, check=True)
    argv = [PY, "-m", "fabricweb.runfabric", "--sim-dir", str(scratch / "sim"), "--nodes", "64", "--web", web]
    argv += ["--fabric", "--start-redis", *(f"--fault={f}" for f in demo_faults()), "--agent-stops", "cn064", "--slurm"]
    argv += ["--log", str(scratch / "fabric.log"), "--login", "shots"]
    proc = subprocess.Popen(argv, env=env, cwd=REPO, stdout=subprocess.PIPE, text=True, start_new_session=True)
    password: list[str] = []
    got = threading.Event()

    def read() -> None:
        for line in proc.stdout:
            found = re.search(r"password: (\S+)", line)
            if found:
                password.append(found[1])
                got.set()

    threading.Thread(target=read, daemon=True).start()
    if not got.wait(300):
        stop(proc)
        raise SystemExit(f"runfabric printed no password in 300 s; see {scratch / 'fabric.log'}")
    return proc, password[0]


def stop(proc: subprocess.Popen) -> None:
    proc.send_signal(2)  # Ctrl-C: runfabric stops every process it started
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()


def redeflate(path: Path) -> None:
    """The same pixels, compressed harder: Chromium's PNG encoder favours speed."""
    if shutil.which("pngquant"):
        subprocess.run(["pngquant", "--force", "--skip-if-larger", "--output", str(path), str(path)], check=False)
    data = path.read_bytes()
    chunks, pos, idat = [], 8, b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IDAT":
            idat += body
            if chunks and chunks[-1][0] == b"IDAT":
                continue
        chunks.append((kind, body))
    packed = zlib.compress(zlib.decompress(idat), 9)
    out = bytearray(data[:8])
    for kind, body in chunks:
        body = packed if kind == b"IDAT" else body
        out += struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    if len(out) < len(data):
        path.write_bytes(bytes(out))


def take(base: str, password: str, out: Path, since: str, settle_until: float) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        errors: list[str] = []

        def tab(**options):
            context = browser.new_context(**options)
            page = context.new_page()
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(f"{base}/login/")
            page.fill("input[name=username]", "shots")
            page.fill("input[name=password]", password)
            page.click("button[type=submit]")
            page.wait_for_url(f"{base}/")
            return page

        def shot(
            page, path: str, name: str, full_page=False, wait: str | None = None, until: str | None = None
        ) -> None:
            page.goto(f"{base}{path}", wait_until="load")
            if wait:
                page.wait_for_function(wait, timeout=30_000)
            page.wait_for_timeout(500)  # Plotly's and the grid's last frame
            clip = None
            if until:
                width = page.viewport_size["width"]
                clip = {"x": 0, "y": 0, "width": width, "height": page.locator(until).bounding_box()["y"] - 8}
            page.screenshot(path=str(out / f"{name}.png"), full_page=full_page, clip=clip)
            print(f"  {name}.png: {path}", flush=True)

        def section(page, path: str, name: str, heading: str) -> None:
            """One section of a page: from its <h2> to the next (a node page's 8 card paths come before its matrix)."""
            page.goto(f"{base}{path}", wait_until="load")
            top, end = page.evaluate(
                """(heading) => {
                    const hs = [...document.querySelectorAll('h2')];
                    const i = hs.findIndex(h => h.textContent.startsWith(heading));
                    const y = h => h.getBoundingClientRect().top + window.scrollY;
                    return [y(hs[i]), hs[i + 1] ? y(hs[i + 1]) : document.body.scrollHeight];
                }""",
                heading,
            )
            width = page.viewport_size["width"]
            clip = {"x": 0, "y": top - 8, "width": width, "height": end - top}
            page.screenshot(path=str(out / f"{name}.png"), full_page=True, clip=clip)
            print(f"  {name}.png: {path}", flush=True)

        desk = tab(viewport={"width": 1400, "height": 900})

        def listed() -> bool:
            """Whether the overview lists every fault yet; if not, the page is reloaded for the next look."""
            if all(n in " ".join(desk.locator(".problems").all_inner_texts()) for n in WAIT_FOR):
                return True
            desk.reload()
            return False

        wait_for(f"the overview listing {', '.join(WAIT_FOR)}", listed, 600, 5)
        time.sleep(max(0.0, settle_until - time.monotonic()))
        charts = "() => [...document.querySelectorAll('.js-plotly-plot')].every(c => c.data && c.data.length)"
        shot(desk, "/", "overview")
        # The charts from the fabric's first poll (a custom range), not an hour mostly before it; down to the events.
        shot(
            desk, f"{PORT_PAGE}?from={since}", "port", full_page=True, wait=charts, until="h2:has-text('Raw counters')"
        )
        shot(desk, NODE_PAGE, "node", full_page=True)
        section(desk, GPU_NODE_PAGE, "gpu-node", "GPUs and RDMA devices")
        shot(desk, "/events/", "events")
        shot(desk, "/jobs/", "jobs")
        wall = tab(viewport={"width": 2560, "height": 1440})
        shot(wall, "/wall/", "wall")
        # 3840x2160: more rows of the same size, not the 2560 wall scaled up
        shot(tab(viewport={"width": 3840, "height": 2160}), "/wall/", "wall-4k")
        phone = tab(viewport={"width": 390, "height": 844}, device_scale_factor=2, color_scheme="dark", is_mobile=True)
        # The counts and 3 problems (the list's first item is its column heads)
        shot(phone, "/", "phone", full_page=True, until="#live-problems .problems li:nth-child(5)")
        browser.close()
        if errors:
            raise SystemExit(f"console errors on the pages: {errors}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=REPO / "docs" / "screenshots")
    p.add_argument("--settle", type=float, default=180.0, help="seconds of polls before the shots (default 180)")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    web = f"127.0.0.1:{free_port()}"
    with tempfile.TemporaryDirectory(prefix="fabricweb-shots-") as scratch:
        began, since = time.monotonic(), datetime.now(UTC).strftime("%Y-%m-%dT%H:%MZ")
        print(f"starting the demo's fabric on http://{web}/ (log: {scratch}/fabric.log)", flush=True)
        proc, password = start_fabric(Path(scratch), web)
        try:
            take(f"http://{web}", password, args.out, since, began + args.settle)
        finally:
            stop(proc)
    for name in SHOTS:
        png = args.out / f"{name}.png"
        redeflate(png)
        print(f"{png}: {png.stat().st_size / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
