"""A column of random UUIDs (version 4) as text, built without a Python step per record.

The random bytes for the whole column come from one ``os.urandom`` call and
are turned into hex at once; the 36-character texts are then assembled with
strided slice assignments, one per character position, and handed to Arrow
as the data buffer of a string array with fixed 36-byte offsets.
"""

from __future__ import annotations

import os
from array import array

import pyarrow as pa

_TEXT, _HEX = 36, 32
_DASHES = (8, 13, 18, 23)
_VERSION_AT, _VARIANT_AT = 14, 19  # "xxxxxxxx-xxxx-4xxx-Vxxx-xxxxxxxxxxxx", V in 8, 9, a, b
# The variant digit keeps the two low bits of a random hex digit and sets the high bits to 10.
_VARIANT = bytes.maketrans(b"0123456789abcdef", b"89ab89ab89ab89ab")
_INT32 = "i" if array("i").itemsize == 4 else "l"


def random_uuids(count: int) -> pa.StringArray:
    """``count`` random version-4 UUIDs as lowercase text."""
    digits = os.urandom(16 * count).hex().encode("ascii")
    text = bytearray(_TEXT * count)
    source = 0
    for position in range(_TEXT):
        if position in _DASHES:
            text[position::_TEXT] = b"-" * count
        else:
            text[position::_TEXT] = digits[source::_HEX]
            source += 1
    text[_VERSION_AT::_TEXT] = b"4" * count
    text[_VARIANT_AT::_TEXT] = text[_VARIANT_AT::_TEXT].translate(_VARIANT)
    offsets = array(_INT32, range(0, _TEXT * count + 1, _TEXT))
    return pa.Array.from_buffers(pa.string(), count, [None, pa.py_buffer(offsets), pa.py_buffer(bytes(text))])
