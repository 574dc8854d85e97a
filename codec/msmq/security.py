"""[MS-MQMQ] 2.2.20.6 SecurityHeader (and the [MS-DTYP] 2.4.2.2 SID it may carry).

Layout: a 16-byte fixed part of five size fields, then SecurityData holding,
in this order, SecurityID, EncryptionKey, Signature, SenderCert and
ProviderInfo, "each field ... aligned up to the next 4-byte boundary", an
item of size zero taking no space.  The size fields govern the layout; the
Flags.AI bit does not (the spec's own example, [MS-MQQB] 4.1.7, carries a
28-byte SID with AI clear).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

import construct as cs

from ..render import json_ready
from ..errors import DecodeError
from ._optcommon import Cursor, OptionalHeader, align4, guid_str, split_bits, utf16_text

__all__ = ["SecurityHeader", "SID", "SECURITY_FLAGS", "ProviderInfo"]

#: SecurityHeader.Flags sub-fields, name -> (shift, width).
SECURITY_FLAGS = {
    "ST": (0, 4), "AU": (4, 1), "EB": (5, 1), "DE": (6, 1), "AI": (7, 1),
    "AS": (8, 4), "X12": (12, 1), "X13": (13, 1), "X14": (14, 1), "X15": (15, 1),
}

SecurityHeaderStruct = cs.Struct(
    "Flags" / cs.Int16ul,
    "SenderIdSize" / cs.Int16ul,
    "EncryptionKeySize" / cs.Int16ul,
    "SignatureSize" / cs.Int16ul,
    "SenderCertSize" / cs.Int32ul,
    "ProviderInfoSize" / cs.Int32ul,
)

#: SecurityData items in wire order: (item, its size field, offset of the
#: size field in the fixed part).
_ITEMS = (
    ("SecurityID", "SenderIdSize", 2),
    ("EncryptionKey", "EncryptionKeySize", 4),
    ("Signature", "SignatureSize", 6),
    ("SenderCert", "SenderCertSize", 8),
    ("ProviderInfo", "ProviderInfoSize", 12),
)


@dataclass
class SID:
    """[MS-DTYP] 2.4.2.2 SID: Revision, SubAuthorityCount, a 6-byte
    big-endian IdentifierAuthority, SubAuthorityCount little-endian ULONGs."""

    Revision: int
    SubAuthorityCount: int
    IdentifierAuthority: bytes
    SubAuthority: tuple

    @classmethod
    def from_bytes(cls, raw: bytes) -> "SID | None":
        """The SID in ``raw``, or None when ``raw`` is not exactly one SID."""
        if len(raw) < 8:
            return None
        count = raw[1]
        if raw[0] != 1 or count > 15 or len(raw) != 8 + 4 * count:
            return None
        subs = struct.unpack_from("<%dI" % count, raw, 8)
        return cls(raw[0], count, bytes(raw[2:8]), tuple(subs))

    def encode(self) -> bytes:
        return (bytes([self.Revision, self.SubAuthorityCount]) + self.IdentifierAuthority
                + struct.pack("<%dI" % len(self.SubAuthority), *self.SubAuthority))

    def __str__(self) -> str:
        # [MS-DTYP] 2.4.2.1 SID string format
        auth = int.from_bytes(self.IdentifierAuthority, "big")
        auth_text = str(auth) if auth < 2 ** 32 else "0x%012X" % auth
        return "S-%d-%s" % (self.Revision, auth_text) + "".join("-%d" % s for s in self.SubAuthority)


@dataclass
class ProviderInfo:
    """The ProviderInfo item: ProviderType and a NUL-terminated UTF-16 ProviderName."""

    ProviderType: int
    ProviderName: bytes  # raw UTF-16LE including the terminator

    @json_ready
    def to_dict(self) -> dict:
        return {"ProviderType": self.ProviderType, "ProviderName": utf16_text(self.ProviderName)}


_ProviderInfo = ProviderInfo  # (SecurityHeader has a field of that name)


@dataclass
class SecurityHeader(OptionalHeader):
    """[MS-MQMQ] 2.2.20.6.  Items are raw bytes; ``paddings`` keeps, per item,
    the bytes that align it to 4 so that encode() is exact."""

    STRUCTURE = "SecurityHeader"

    Flags: int = 0
    SenderIdSize: int = 0
    EncryptionKeySize: int = 0
    SignatureSize: int = 0
    SenderCertSize: int = 0
    ProviderInfoSize: int = 0
    SecurityID: bytes = b""
    EncryptionKey: bytes = b""
    Signature: bytes = b""
    SenderCert: bytes = b""
    ProviderInfo: bytes = b""
    paddings: dict = field(default_factory=dict)

    # -- derived views ----------------------------------------------------
    @property
    def ST(self) -> int:
        return self.Flags & 0xF

    @property
    def sender_id(self):
        """The SecurityID per Flags.ST: a SID (1), a GUID string (2), else None."""
        if self.ST == 1:
            return SID.from_bytes(self.SecurityID)
        if self.ST == 2 and len(self.SecurityID) == 16:
            return guid_str(self.SecurityID)
        return None

    @property
    def provider_info(self) -> _ProviderInfo | None:
        raw = self.ProviderInfo
        if len(raw) < 6:
            return None
        name = raw[4:]
        # the name runs to its NUL terminator (at an even offset) or the end
        i = name.find(b"\x00\x00")
        while i >= 0 and i % 2:
            i = name.find(b"\x00\x00", i + 1)
        if i >= 0:
            name = name[: i + 2]
        return ProviderInfo(struct.unpack_from("<I", raw, 0)[0], name)

    # -- decode / encode --------------------------------------------------
    @classmethod
    def _decode(cls, cur: Cursor):
        at = cur.start
        v = cur.parse(SecurityHeaderStruct, at)
        h = cls(v.Flags, v.SenderIdSize, v.EncryptionKeySize, v.SignatureSize,
                v.SenderCertSize, v.ProviderInfoSize)
        bits = split_bits(v.Flags, SECURITY_FLAGS)
        if bits["ST"] not in (0, 1, 2):
            cur.violation("Flags", at, "ST must be 0x0, 0x1 or 0x2, got 0x%x" % bits["ST"])
        if bits["AU"]:
            cur.violation("Flags", at, "AU must be 0")
        if bits["AS"]:
            cur.violation("Flags", at, "AS must be 0, got 0x%x" % bits["AS"])
        if bits["ST"] == 0 and v.SenderIdSize:
            cur.violation("SenderIdSize", at + 2, "ST = 0 requires SenderIdSize 0, got %d" % v.SenderIdSize)
        if bits["ST"] == 2 and v.SenderIdSize != 16:
            cur.violation("SenderIdSize", at + 2,
                          "ST = 2 (queue manager GUID) requires 16 bytes, got %d" % v.SenderIdSize)
        if v.SenderCertSize > 0xFFFF:
            cur.violation("SenderCertSize", at + 8,
                          "valid range is 0x00000000..0x0000FFFF, got 0x%08x" % v.SenderCertSize)
        if not (v.SenderIdSize or v.EncryptionKeySize or v.SignatureSize or v.SenderCertSize
                or v.ProviderInfoSize):
            cur.violation("", at, "at least one of the five size fields must be nonzero")
        if bits["DE"] and v.ProviderInfoSize:
            cur.violation("ProviderInfoSize", at + 12,
                          "Flags.DE is set (default provider) so ProviderInfo must not be included")

        # every item, with its alignment, must lie before the end: checked
        # one by one (naming the size field that overflows) before slicing
        pos = at + 16
        for item, size_field, rel in _ITEMS:
            size = getattr(v, size_field)
            if not size:
                continue
            if pos + align4(size) > cur.end:
                raise DecodeError(cls.STRUCTURE, size_field, at + rel,
                                  "%s of %d bytes at offset %d runs past the packet end (%d)"
                                  % (item, size, pos, cur.end))
            setattr(h, item, cur.take(pos, size, size_field))
            pad = align4(size) - size
            if pad:
                h.paddings[item] = cur.take(pos + size, pad, item)
            pos += align4(size)

        if bits["ST"] == 1 and v.SenderIdSize and SID.from_bytes(h.SecurityID) is None:
            cur.violation("SecurityID", at + 16,
                          "ST = 1 but the %d bytes are not one SID ([MS-DTYP] 2.4.2.2)" % v.SenderIdSize)
        if h.ProviderInfo and not bits["DE"]:
            pi = h.provider_info
            if pi is None or pi.ProviderName[-2:] != b"\x00\x00" or len(pi.ProviderName) % 2:
                cur.violation("ProviderInfo", pos - align4(v.ProviderInfoSize),
                              "ProviderName is not a null-terminated Unicode string")
        return h, pos

    def encode(self) -> bytes:
        out = [SecurityHeaderStruct.build(dict(
            Flags=self.Flags, SenderIdSize=self.SenderIdSize, EncryptionKeySize=self.EncryptionKeySize,
            SignatureSize=self.SignatureSize, SenderCertSize=self.SenderCertSize,
            ProviderInfoSize=self.ProviderInfoSize))]
        for item, size_field, _ in _ITEMS:
            raw = getattr(self, item)
            size = getattr(self, size_field)
            if not size:
                continue
            if len(raw) != size:
                from ..errors import EncodeError
                raise EncodeError(self.STRUCTURE, item, "%s holds %d bytes but %s is %d"
                                  % (item, len(raw), size_field, size))
            out.append(raw)
            out.append(self.paddings.get(item, b"\x00" * (align4(size) - size)))
        return b"".join(out)

    @classmethod
    def create(cls, *, Flags: int = 0, SecurityID: bytes = b"", EncryptionKey: bytes = b"",
               Signature: bytes = b"", SenderCert: bytes = b"", ProviderInfo: bytes = b"") -> "SecurityHeader":
        """A header whose size fields match the items given."""
        return cls(Flags, len(SecurityID), len(EncryptionKey), len(Signature), len(SenderCert),
                   len(ProviderInfo), SecurityID, EncryptionKey, Signature, SenderCert, ProviderInfo)

    @json_ready
    def to_dict(self) -> dict:
        d = {
            "Flags": self.Flags,
            "FlagFields": split_bits(self.Flags, SECURITY_FLAGS),
            "SenderIdSize": self.SenderIdSize,
            "EncryptionKeySize": self.EncryptionKeySize,
            "SignatureSize": self.SignatureSize,
            "SenderCertSize": self.SenderCertSize,
            "ProviderInfoSize": self.ProviderInfoSize,
        }
        sd: dict = {}
        if self.SenderIdSize:
            sid = self.sender_id
            sd["SecurityID"] = str(sid) if sid is not None else self.SecurityID
        if self.EncryptionKeySize:
            sd["EncryptionKey"] = self.EncryptionKey
        if self.SignatureSize:
            sd["Signature"] = self.Signature
        if self.SenderCertSize:
            sd["SenderCert"] = self.SenderCert
        if self.ProviderInfoSize:
            pi = self.provider_info if not (self.Flags & (1 << 6)) else None
            sd["ProviderInfo"] = pi.to_dict() if pi is not None else self.ProviderInfo
        d["SecurityData"] = sd
        return d
