"""The ITCH 5.0 message layout of this plug-in: the one definition lives next to the kernels
(``obook._kernels.itch_layout``, which the kernels may import; plain data), re-exported here."""

from ..._kernels.itch_layout import BODY, HEADER, MESSAGES, OTHER, field, offset, size  # noqa: F401

__all__ = ["BODY", "HEADER", "MESSAGES", "OTHER", "field", "offset", "size"]
