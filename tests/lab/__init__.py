"""A two-node (up to eight) lab of GB10-like nodes in network namespaces, reached by real OpenSSH.

See tests/lab/README.md. Needs root, iproute2, util-linux (unshare, nsenter) and openssh-server.
"""

from __future__ import annotations

from tests.lab.addresses import map_cidr, map_ip, map_model, map_text
from tests.lab.errors import LabError
from tests.lab.lab import Lab
from tests.lab.spec import LabNodeSpec, LinkSpec

__all__ = ["Lab", "LabError", "LabNodeSpec", "LinkSpec", "map_cidr", "map_ip", "map_model", "map_text"]
