"""A real Jupyter kernel for the tests: its kernelspec, its manager, a started kernel, code run in it."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager


def kernel_dirs(tmp_path_factory: pytest.TempPathFactory, name: str, display_name: str) -> list[str]:
    """A kernelspec ``name`` for this interpreter (no OpenAI key in its environment), in a folder of its own."""
    folder = tmp_path_factory.mktemp("kernels") / name
    folder.mkdir()
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": display_name,
        "language": "python",
        "env": {"OPENAI_API_KEY": ""},
    }
    (folder / "kernel.json").write_text(json.dumps(spec))
    return [str(folder.parent)]


def kernel_manager(name: str, dirs: list[str]) -> KernelManager:
    """A manager of the kernelspec ``name`` found in ``dirs``."""
    return KernelManager(kernel_name=name, kernel_spec_manager=KernelSpecManager(kernel_dirs=dirs))


@contextmanager
def running_kernel(name: str, dirs: list[str]) -> Iterator[tuple[KernelManager, Any]]:
    """A started kernel and its ready client, shut down on exit."""
    manager = kernel_manager(name, dirs)
    manager.start_kernel()
    client = manager.client()
    client.start_channels()
    client.wait_for_ready(timeout=60)
    try:
        yield manager, client
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def run_code(client: Any, code: str) -> str:
    """Run ``code`` in the kernel: what it printed, and each error as ``name: value``, once it is idle."""
    msg_id = client.execute(code)
    text = []
    while True:
        message = client.get_iopub_msg(timeout=60)
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        if message["msg_type"] == "stream":
            text.append(message["content"]["text"])
        if message["msg_type"] == "error":
            text.append(f"{message['content']['ename']}: {message['content']['evalue']}")
        if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            return "".join(text)
