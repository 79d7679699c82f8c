"""docs/architecture.md draws the layers the import-linter contracts in pyproject.toml
enforce: each layers contract's list, exactly, and no list that no contract has."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
_BLOCK = re.compile(r"^<!-- layers: (\S+) -->\n```text\n(.*?)^```$", re.M | re.S)


def contract_layers() -> dict[str, list[str]]:
    """Each layers contract's container, with its layers, highest first."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    out: dict[str, list[str]] = {}
    for contract in config["tool"]["importlinter"]["contracts"]:
        if contract["type"] == "layers":
            (container,) = contract["containers"]
            out[container] = [
                " | ".join(p.strip() for p in layer.split("|")) for layer in contract["layers"]
            ]
    return out


def doc_layers(text: str) -> dict[str, list[str]]:
    """Each layer list the document draws, by the container it names."""
    out: dict[str, list[str]] = {}
    for container, body in _BLOCK.findall(text):
        assert container not in out, f"two lists for {container}"
        out[container] = [line.strip() for line in body.splitlines() if line.strip()]
    return out


def test_the_document_draws_every_layers_contract_as_it_is() -> None:
    contracts = contract_layers()
    assert set(contracts) >= {"bot", "scheduler"}
    assert doc_layers(DOC.read_text()) == contracts


def test_a_layer_changed_in_the_doc_alone_is_caught() -> None:
    text = DOC.read_text().replace("\nrender\n", "\nrender | posting\n", 1)
    assert text != DOC.read_text()
    assert doc_layers(text) != contract_layers()


def test_the_scheduler_never_imports_the_bot_says_the_doc_and_a_contract() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    forbidden = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "forbidden"]
    assert any(
        c["source_modules"] == ["scheduler"] and {"bot", "discord"} <= set(c["forbidden_modules"])
        for c in forbidden
    )
    assert "The scheduler never imports the bot or discord.py" in DOC.read_text()
