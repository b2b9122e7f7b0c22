"""Where the stack's description lives: the checkout, or the copy a wheel carries."""

from __future__ import annotations

from pathlib import Path


def stack_root() -> Path:
    """The folder holding ``infra/`` and ``functions/``.

    A wheel carries them as ``tidelog/_stack``; an editable install reads the checkout.
    """
    packaged = Path(__file__).resolve().parents[1] / "_stack"
    if (packaged / "infra" / "template.yaml").is_file():
        return packaged
    checkout = Path(__file__).resolve().parents[3]
    if (checkout / "infra" / "template.yaml").is_file():
        return checkout
    raise FileNotFoundError(
        "infra/template.yaml not found beside the tidelog package or in its checkout"
    )


def template_path() -> Path:
    return stack_root() / "infra" / "template.yaml"
