"""`dhpo-suite dashboard [RUNS_DIR]`: start the Streamlit app over a directory of runs."""

from __future__ import annotations

import errno
import importlib.util
import ipaddress
import os
import socket
import sys
from pathlib import Path

import typer

from dhpo_suite.dashboard.registry import RUNS_DIR_ENV

APP = Path(__file__).with_name("app.py")


def streamlit_argv(port: int, headless: bool, address: str) -> list[str]:
    """The `python -m streamlit run` command line for the app (runs directory passed in the environment)."""
    return [
        sys.executable, "-m", "dhpo_suite.dashboard.serve", "run", str(APP),
        "--server.port", str(port),
        "--server.address", address,
        "--server.headless", str(headless).lower(),
        "--browser.gatherUsageStats", "false",
        # The app polls run files itself (st.fragment); Streamlit's source watcher would only add load.
        "--server.fileWatcherType", "none",
        "--theme.base", "light",
        "--client.toolbarMode", "viewer",
    ]


def register(app: typer.Typer) -> None:
    @app.command(help="Open the Streamlit dashboard over a directory of runs.")
    def dashboard(
        runs_dir: Path = typer.Argument(Path("runs"), metavar="RUNS_DIR",
                                        help="Directory holding one sub-directory per run."),
        port: int = typer.Option(8501, help="Port to serve on."),
        address: str = typer.Option("localhost", help="Address to bind (0.0.0.0 to serve on the network)."),
        headless: bool = typer.Option(False, "--headless/--open", help="Do not open a browser window."),
    ) -> None:
        if not runs_dir.is_dir():
            typer.echo(f"dhpo-suite dashboard: runs directory {runs_dir} does not exist.", err=True)
            raise typer.Exit(2)
        problem = check_address(port, address)
        if problem:
            typer.echo(f"error: {problem}", err=True)
            raise typer.Exit(2)
        if not all(importlib.util.find_spec(name) for name in ("streamlit", "plotly")):
            typer.echo("dhpo-suite dashboard needs streamlit and plotly: pip install 'dhpo-suite[dashboard]'", err=True)
            raise typer.Exit(2)
        host = "localhost" if address in ("0.0.0.0", "::") else address
        typer.echo(f"Dashboard over {runs_dir.resolve()}: http://{host}:{port}")
        sys.stdout.flush()
        env = {**os.environ, RUNS_DIR_ENV: str(runs_dir.resolve())}
        # exec: Ctrl-C and a parent's kill reach the server directly, with no wrapper process left behind.
        os.execve(sys.executable, streamlit_argv(port, headless, address), env)


def check_address(port: int, address: str) -> str | None:
    """Why Streamlit could not serve on (address, port), as one line naming the option; None if it can. Binding
    a socket there (then closing it) catches a malformed address, one this machine lacks and a port in use."""
    if not 1 <= port <= 65535:
        return f"--port: must be an integer from 1 to 65535, got {port}"
    try:
        ipaddress.ip_address(address)
    except ValueError:
        if not address or all(c.isdigit() or c == "." for c in address):  # 999.1.1.1: not an IPv4 address
            return (f"--address: {address!r} is not an IP address or host name (e.g. localhost, 127.0.0.1, "
                    f"0.0.0.0)")
    try:
        infos = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as e:
        return f"--address: cannot resolve {address!r} ({e}); use localhost, an IP address or 0.0.0.0"
    family, kind, proto, _, where = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Streamlit's server does
        try:
            sock.bind(where)
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                return f"--port: {port} is already in use on {address}; choose another --port"
            return f"--address: cannot serve on {address}:{port} ({e.strerror or e})"
    return None
