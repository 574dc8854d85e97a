"""MessagePropertiesHeader ([MS-MQMQ] 2.2.19.3).

56 fixed bytes (Flags .. ExtensionSize), the UTF-16 Label (LabelLength WCHARs
including the terminating null), ExtensionData (ExtensionSize bytes),
MessageBody (MessageSize bytes), then padding to a multiple of 4 bytes (kept
as received).
"""
from __future__ import annotations

from typing import Any

import construct as cs

from ..render import json_ready
from ..errors import DecodeError, EncodeError, Problems
from ..layout import build, field_offsets
from .base import BitFlags, FixedHeader, FlagsField
from . import constants as C

__all__ = ["MessagePropertiesFlags", "MessagePropertiesHeader", "message_class_name"]


class MessagePropertiesFlags(BitFlags):
    """MessagePropertiesHeader.Flags: PA, PR, NA, NR (administration
    acknowledgments requested) and 4 unused X bits."""

    FIELDS = C.MP_FLAGS
    WIDTH = 8


def message_class_name(value: int) -> str:
    """MQMSG_CLASS_* name, "custom" for an application class (bits of 0xE1FF
    only), else "invalid"."""
    if value in C.MQMSG_CLASS_NAMES:
        return C.MQMSG_CLASS_NAMES[value]
    if value & ~C.MESSAGE_CLASS_CUSTOM_MASK & 0xFFFF == 0:
        return "custom"
    return "invalid"


class MessagePropertiesHeader(FixedHeader):
    """[MS-MQMQ] 2.2.19.3: 56 fixed bytes, then the Label, ExtensionData and
    MessageBody, padded to a multiple of 4.  LabelLength, MessageSize,
    AllocationBodySize and ExtensionSize None: computed when encoding."""

    STRUCTURE = "MessagePropertiesHeader"
    Flags: MessagePropertiesFlags
    LabelLength: int | None
    MessageClass: int
    CorrelationID: bytes
    BodyType: int
    ApplicationTag: int
    MessageSize: int | None
    AllocationBodySize: int | None
    PrivacyLevel: int
    HashAlgorithm: int
    EncryptionAlgorithm: int
    ExtensionSize: int | None
    Label: str | None
    label_raw: bytes | None
    ExtensionData: bytes
    MessageBody: bytes
    Padding: bytes | None
    truncated: bool
    LAYOUT = cs.Struct(
        "Flags" / FlagsField(MessagePropertiesFlags, cs.Int8ul),
        "LabelLength" / cs.Int8ul,
        "MessageClass" / cs.Int16ul,
        "CorrelationID" / cs.Bytes(20),
        "BodyType" / cs.Int32ul,
        "ApplicationTag" / cs.Int32ul,
        "MessageSize" / cs.Int32ul,
        "AllocationBodySize" / cs.Int32ul,
        "PrivacyLevel" / cs.Int32ul,
        "HashAlgorithm" / cs.Int32ul,
        "EncryptionAlgorithm" / cs.Int32ul,
        "ExtensionSize" / cs.Int32ul,
    )
    DEFAULTS = {"LabelLength": None, "MessageClass": C.MQMSG_CLASS["MQMSG_CLASS_NORMAL"], "CorrelationID": bytes(20),
                "MessageSize": None, "AllocationBodySize": None, "ExtensionSize": None,
                "ExtensionData": b"", "MessageBody": b"", "truncated": False}
    #: label_raw: LabelLength*2 bytes as received; Padding None: zeros as needed; truncated:
    #: lenient decoding of a cut packet (ExtensionData/MessageBody hold the bytes present, no padding)
    EXTRA = ("Label", "label_raw", "ExtensionData", "MessageBody", "Padding", "truncated")

    # ------------------------------------------------------------------ decode
    @classmethod
    def decode(cls, data, offset: int = 0, end: int | None = None, *, lenient: bool = False,
               warnings: list | None = None):
        p = Problems(lenient, warnings)
        end = len(data) if end is None else end
        S = cls.STRUCTURE
        if end - offset < cls.SIZE:
            raise cls.cut_short(offset, end)
        h = v = cls.read_fixed(data, offset)
        rel = field_offsets(cls.LAYOUT)
        # ---- rules that do not change the layout: warnings
        if message_class_name(v.MessageClass) == "invalid":
            p.note(S, "MessageClass", offset + 2, "0x%04X is neither a MESSAGE_CLASS_VALUES value nor a "
                   "custom class (bits of 0xE1FF only)" % v.MessageClass)
        if v.PrivacyLevel not in C.PRIVACY_LEVELS:
            p.note(S, "PrivacyLevel", offset + 40, "0x%08X is not a defined privacy level" % v.PrivacyLevel)
        if v.AllocationBodySize < v.MessageSize:
            p.error(S, "AllocationBodySize", offset + 36, "AllocationBodySize %d is smaller than "
                    "MessageSize %d" % (v.AllocationBodySize, v.MessageSize))
        # ---- Label
        pos = offset + cls.SIZE
        if v.LabelLength > C.MAX_LABEL_LENGTH:
            raise DecodeError(S, "LabelLength", offset + 1,
                              "LabelLength %d above the maximum 250 WCHARs" % v.LabelLength)
        if v.LabelLength:
            n = v.LabelLength * 2
            if n > end - pos:
                raise DecodeError(S, "Label", pos, "Label of %d bytes runs past the packet (%d bytes remain)"
                                  % (n, max(end - pos, 0)))
            raw = bytes(data[pos:pos + n])
            h.label_raw = raw
            if raw[-2:] != b"\0\0":
                p.error(S, "Label", pos + n - 2, "Label is not null-terminated")
                h.Label = raw.decode("utf-16-le", "surrogatepass")
            else:
                text = raw[:-2].decode("utf-16-le", "surrogatepass")
                if "\0" in text:
                    p.note(S, "Label", pos, "Label holds a null character before its end")
                h.Label = text
            pos += n
        # ---- ExtensionData and MessageBody (sizes are untrusted)
        for field, size_field, size in (("ExtensionData", "ExtensionSize", v.ExtensionSize),
                                        ("MessageBody", "MessageSize", v.MessageSize)):
            if size > end - pos:
                if not lenient:
                    raise DecodeError(S, size_field, offset + rel[size_field],
                                      "%s %d runs past the packet: %s at offset %d has %d bytes"
                                      % (size_field, size, field, pos, max(end - pos, 0)))
                p.error(S, size_field, offset + rel[size_field],
                        "%s %d runs past the packet: %d bytes of %s present, kept as a partial value"
                        % (size_field, size, max(end - pos, 0), field))
                setattr(h, field, bytes(data[pos:end]))
                h.truncated = True
                return h, end
            setattr(h, field, bytes(data[pos:pos + size]))
            pos += size
        need = (-(pos - offset)) % 4
        if need > end - pos:
            if not lenient:
                raise DecodeError(S, "", pos, "padding to a multiple of 4 bytes (%d bytes) runs past "
                                  "the packet" % need)
            p.error(S, "", pos, "padding of %d bytes runs past the packet" % need)
            h.Padding = bytes(data[pos:end])
            h.truncated = True
            return h, end
        h.Padding = bytes(data[pos:pos + need])
        return h, pos + need

    # ------------------------------------------------------------------ encode
    def _label_bytes(self) -> bytes:
        if self.label_raw is not None:
            return self.label_raw
        if self.Label is None:
            return b""
        return self.Label.encode("utf-16-le", "surrogatepass") + b"\0\0"

    def encode(self) -> bytes:
        S = self.STRUCTURE
        label = self._label_bytes()
        label_len = len(label) // 2 if self.LabelLength is None else self.LabelLength
        if label_len * 2 != len(label):
            raise EncodeError(S, "LabelLength", "LabelLength %d does not match a Label of %d bytes"
                              % (label_len, len(label)))
        if label_len > C.MAX_LABEL_LENGTH:
            raise EncodeError(S, "LabelLength", "Label of %d WCHARs is longer than 250" % label_len)
        msize = len(self.MessageBody) if self.MessageSize is None else self.MessageSize
        esize = len(self.ExtensionData) if self.ExtensionSize is None else self.ExtensionSize
        if not self.truncated:
            if msize != len(self.MessageBody):
                raise EncodeError(S, "MessageSize", "MessageSize %d but MessageBody has %d bytes"
                                  % (msize, len(self.MessageBody)))
            if esize != len(self.ExtensionData):
                raise EncodeError(S, "ExtensionSize", "ExtensionSize %d but ExtensionData has %d bytes"
                                  % (esize, len(self.ExtensionData)))
        alloc = msize if self.AllocationBodySize is None else self.AllocationBodySize
        fixed = {name: getattr(self, name) for name in self.FIELDS}
        fixed.update(LabelLength=label_len, MessageSize=msize, AllocationBodySize=alloc, ExtensionSize=esize)
        out = bytearray(build(self.LAYOUT, fixed, S))
        out += label + self.ExtensionData + self.MessageBody
        if self.truncated:
            return bytes(out) + (self.Padding or b"")
        need = (-len(out)) % 4
        pad = b"\0" * need if self.Padding is None else self.Padding
        if len(pad) != need:
            raise EncodeError(S, "Padding", "%d padding bytes needed, %d given" % (need, len(pad)))
        return bytes(out + pad)

    # ------------------------------------------------------------------ presentation
    @json_ready
    def to_dict(self) -> dict:
        label = self._label_bytes()
        d: dict[str, Any] = {
            "Flags": self.Flags.to_dict(),
            "LabelLength": len(label) // 2 if self.LabelLength is None else self.LabelLength,
            "MessageClass": self.MessageClass,
            "MessageClassName": message_class_name(self.MessageClass),
            "CorrelationID": self.CorrelationID,
            "BodyType": self.BodyType,
            "BodyTypeName": C.VARTYPES.get(self.BodyType, "unknown"),
            "ApplicationTag": self.ApplicationTag,
            "MessageSize": len(self.MessageBody) if self.MessageSize is None else self.MessageSize,
            "AllocationBodySize": self.AllocationBodySize,
            "PrivacyLevel": self.PrivacyLevel,
            "PrivacyLevelName": C.PRIVACY_LEVELS.get(self.PrivacyLevel, "unknown"),
            "HashAlgorithm": self.HashAlgorithm,
            "HashAlgorithmName": C.HASH_ALGORITHMS.get(self.HashAlgorithm, "unknown"),
            "EncryptionAlgorithm": self.EncryptionAlgorithm,
            "EncryptionAlgorithmName": C.ENCRYPTION_ALGORITHMS.get(self.EncryptionAlgorithm, "unknown"),
            "ExtensionSize": len(self.ExtensionData) if self.ExtensionSize is None else self.ExtensionSize,
        }
        if self.Label is not None:
            d["Label"] = self.Label
        if self.ExtensionData:
            d["ExtensionData"] = self.ExtensionData
        d["MessageBody"] = self.MessageBody
        if self.Padding:
            d["Padding"] = self.Padding
        if self.truncated:
            d["truncated"] = True
        return d
