"""The package to install for a module a cell could not import: the loop offers to install it
(asked first, in every mode, unless the allow list names it: ``policy.install_allowed``) and runs
the cell again without asking the model."""

from __future__ import annotations

import re
from dataclasses import dataclass

from jupyter_ai_ci.events import ErrorInfo

# The import name is not always the package name.
PACKAGES = {
    "sklearn": "scikit-learn", "cv2": "opencv-python", "PIL": "pillow", "bs4": "beautifulsoup4",
    "yaml": "pyyaml", "skimage": "scikit-image", "dateutil": "python-dateutil",
    "dotenv": "python-dotenv", "Crypto": "pycryptodome", "OpenSSL": "pyopenssl",
    "serial": "pyserial", "usb": "pyusb", "magic": "python-magic", "docx": "python-docx",
    "pptx": "python-pptx", "jwt": "pyjwt", "git": "gitpython", "attr": "attrs",
    "google.protobuf": "protobuf", "fitz": "pymupdf", "Levenshtein": "python-levenshtein",
    "mpl_toolkits": "matplotlib", "tables": "tables", "sqlalchemy": "SQLAlchemy",
}
_MODULE = re.compile(r"No module named '([A-Za-z0-9_.]+)'")
_PACKAGE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class MissingModule:
    module: str
    package: str


def missing_module(error: ErrorInfo | None) -> MissingModule | None:
    """The package to install for a ModuleNotFoundError, or None."""
    if error is None or error.ename != "ModuleNotFoundError":
        return None
    m = _MODULE.search(error.evalue)
    if not m:
        return None
    module = m.group(1)
    top = module.split(".")[0]
    package = PACKAGES.get(module) or PACKAGES.get(top) or top
    if not _PACKAGE_NAME.match(package) or top.startswith("_"):
        return None
    return MissingModule(top, package)
