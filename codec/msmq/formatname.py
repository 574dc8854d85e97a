"""MSMQ format names, [MS-MQMQ] 2.1 (a pure text grammar, no I/O).

``FormatName.parse(text)`` accepts the ABNF of [MS-MQMQ] 2.1.2-2.1.7::

    PUBLIC=<guid>[;JOURNAL]
    PRIVATE=<computer guid>\\<1*8 hex digits>[;JOURNAL]
    DIRECT=<protocol>:<address>\\<queue>[;<subqueue>][;JOURNAL]
    DIRECT=<protocol>:<address>\\PRIVATE$\\<queue>[;<subqueue>][;JOURNAL]
    DIRECT=<protocol>:<address>\\SYSTEM$;(JOURNAL|DEADLETTER|DEADXACT)
    DL=<guid>[@<domain>]
    MACHINE=<guid>[;JOURNAL|;DEADLETTER|;DEADXACT]
    CONNECTOR=<guid>[;XACTONLY]
    MULTICAST=<224-239>.<0-255>.<0-255>.<0-255>:<port>
    <element>,<element>,...        (multiple-element, 2.1.7)

Keywords are matched case-insensitively (ABNF quoted strings are
case-insensitive, RFC 5234 2.3).  A parsed FormatName keeps its exact text:
``str(FormatName.parse(t)) == t``.  Equality compares the meaning (keywords
upper-cased, GUIDs as values, the private queue number as an integer), so
``parse(str(fn)) == fn`` always holds.

Suffixes beyond the 2.1 ABNF (``;JOURNAL`` on PUBLIC, the MACHINE and
CONNECTOR suffixes) are those QUEUE_FORMAT (2.2.7) and QUEUE_SUFFIX_TYPE
(2.2.11) allow.  For HTTP/HTTPS direct names the separator after "/MSMQ" may
be "/" as well as "\\" (the form Windows and Metasploit's QueueJumper use:
``DIRECT=http://host/msmq/private$/q``).

Invalid text raises :class:`FormatNameError` (a DecodeError whose
``structure`` is "FormatName", ``field`` the ABNF rule and ``offset`` the
character index).
"""
from __future__ import annotations

import ipaddress
import re
import uuid
from dataclasses import dataclass
from typing import Any, Optional

from ..render import json_ready
from ..errors import DecodeError

__all__ = ["FormatName", "FormatNameError", "PROTOCOLS"]

PROTOCOLS = ("TCP", "OS", "HTTP", "HTTPS", "IPX", "SPX")

_GUID_RE = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}\Z")
_HEX18 = re.compile(r"[0-9A-Fa-f]{1,8}\Z")
# QueueName / Subqueue characters, MSMQ 2.0+: %x21 / %x23-2A / %x2D-3A / %x3C-5B / %x5D-7F
_QCHARS = re.compile(r"[\x21\x23-\x2A\x2D-\x3A\x3C-\x5B\x5D-\x7F]+\Z")
_VCHARS = re.compile(r"[\x21-\x7E]+\Z")
_DEC = r"(0|[1-9][0-9]{0,2})"
_MULTICAST_RE = re.compile(r"%s\.%s\.%s\.%s:(0|[1-9][0-9]{0,4})\Z" % (_DEC, _DEC, _DEC, _DEC))
_SYSTEM_QUEUES = ("JOURNAL", "DEADLETTER", "DEADXACT")


class FormatNameError(DecodeError):
    """Text that is not a format name of [MS-MQMQ] 2.1."""

    def __init__(self, field: str, offset: int, reason: str):
        super().__init__("FormatName", field, offset, reason)


def _guid(text: str, at: int, rule: str) -> uuid.UUID:
    if not _GUID_RE.match(text):
        raise FormatNameError(rule, at, "%r is not a GUID (8-4-4-4-12 hexadecimal digits)" % text)
    return uuid.UUID(text)


@dataclass(frozen=True, eq=False)
class FormatName:
    """One format name (``kind`` PUBLIC, PRIVATE, DIRECT, DL, MACHINE,
    CONNECTOR, MULTICAST) or a multiple-element name (``kind`` MULTIPLE,
    ``elements``).  Fields not meaningful for a kind are None/False."""

    kind: str
    text: str
    guid: Optional[uuid.UUID] = None
    queue_id: Optional[int] = None          # PRIVATE: the hexadecimal queue number
    suffix: Optional[str] = None            # JOURNAL / DEADLETTER / DEADXACT / XACTONLY (upper case)
    protocol: Optional[str] = None          # DIRECT: as written (TCP, OS, HTTP, ...)
    address: Optional[str] = None           # DIRECT: ProtocolAddressSpecification
    private: bool = False                   # DIRECT: \PRIVATE$\ queue
    system: bool = False                    # DIRECT: \SYSTEM$; machine queue
    queue: Optional[str] = None             # DIRECT: QueueName (without subqueue / journal)
    subqueue: Optional[str] = None          # DIRECT: ";" Subqueue (MSMQ 4.0+)
    domain: Optional[str] = None            # DL: "@" DomainName
    multicast_address: Optional[str] = None
    multicast_port: Optional[int] = None
    elements: tuple = ()

    def __post_init__(self) -> None:
        # The constructor FormatName.private (below) shares the field's name, so the
        # dataclass takes that classmethod for the field's default: a name made
        # without private= gets False here, as documented.
        if not isinstance(self.private, bool):
            object.__setattr__(self, "private", False)

    # -- parsing --------------------------------------------------------
    @classmethod
    def parse(cls, text: str) -> "FormatName":
        if not isinstance(text, str):
            raise FormatNameError("", 0, "a format name is text, got %s" % type(text).__name__)
        if text == "":
            raise FormatNameError("FormatName", 0, "empty format name")
        if "," in text:
            parts, elements, pos = text.split(","), [], 0
            for part in parts:
                el = cls._parse_one(part, pos)
                if el.suffix in ("JOURNAL", "DEADLETTER", "DEADXACT") or el.kind == "MACHINE" or el.system:
                    raise FormatNameError("MultipleElementName", pos,
                                          "a multiple-element name cannot contain a read-only queue (%s)" % part)
                elements.append(el)
                pos += len(part) + 1
            return cls("MULTIPLE", text, elements=tuple(elements))
        return cls._parse_one(text, 0)

    @classmethod
    def _parse_one(cls, text: str, base: int) -> "FormatName":
        eq = text.find("=")
        if eq <= 0:
            raise FormatNameError("FormatName", base, "expected KIND=..., got %r" % text)
        kind = text[:eq].upper()
        body, at = text[eq + 1:], base + eq + 1
        if kind == "PUBLIC":
            g, suffix = cls._split_suffix(body, at, ("JOURNAL",), "PublicName")
            return cls("PUBLIC", text, guid=_guid(g, at, "QueueGuid"), suffix=suffix)
        if kind == "PRIVATE":
            bs = body.find("\\")
            if bs < 0:
                raise FormatNameError("PrivateName", at, "expected ComputerGuid \\ queue number")
            g = _guid(body[:bs], at, "ComputerGuid")
            num, suffix = cls._split_suffix(body[bs + 1:], at + bs + 1, ("JOURNAL",), "PrivateName")
            if not _HEX18.match(num):
                raise FormatNameError("PrivateName", at + bs + 1, "queue number must be 1 to 8 hexadecimal digits")
            return cls("PRIVATE", text, guid=g, queue_id=int(num, 16), suffix=suffix)
        if kind == "DL":
            g, _, dom = body.partition("@")
            if "@" in body and not (1 <= len(dom) <= 255 and _VCHARS.match(dom)):
                raise FormatNameError("DomainName", at + len(g) + 1, "DomainName must be 1*255 VCHAR")
            return cls("DL", text, guid=_guid(g, at, "DistributionListGuid"), domain=dom if "@" in body else None)
        if kind == "MACHINE":
            g, suffix = cls._split_suffix(body, at, _SYSTEM_QUEUES, "Machine")
            return cls("MACHINE", text, guid=_guid(g, at, "Machine"), suffix=suffix)
        if kind == "CONNECTOR":
            g, suffix = cls._split_suffix(body, at, ("XACTONLY",), "Connector")
            return cls("CONNECTOR", text, guid=_guid(g, at, "Connector"), suffix=suffix)
        if kind == "MULTICAST":
            m = _MULTICAST_RE.match(body)
            if not m:
                raise FormatNameError("Multicast", at, "expected dotted IPv4 address ':' port, got %r" % body)
            octets = [int(m.group(i)) for i in range(1, 5)]
            port = int(m.group(5))
            if not 224 <= octets[0] <= 239:
                raise FormatNameError("Multicast", at, "first octet must be 224-239 (IPv4 multicast)")
            if any(o > 255 for o in octets) or port > 65535:
                raise FormatNameError("Multicast", at, "octet above 255 or port above 65535")
            return cls("MULTICAST", text, multicast_address=".".join(map(str, octets)), multicast_port=port)
        if kind == "DIRECT":
            return cls._parse_direct(text, body, at)
        raise FormatNameError("FormatName", base, "unknown format name type %r" % text[:eq])

    @staticmethod
    def _split_suffix(body: str, at: int, allowed: tuple, rule: str):
        head, sep, suf = body.partition(";")
        if not sep:
            return body, None
        if suf.upper() not in allowed:
            raise FormatNameError(rule, at + len(head) + 1, "suffix must be one of %s" % ", ".join(allowed))
        return head, suf.upper()

    @classmethod
    def _parse_direct(cls, text: str, body: str, at: int) -> "FormatName":
        colon = body.find(":")
        if colon <= 0:
            raise FormatNameError("DirectName", at, "expected Protocol ':' address")
        protocol = body[:colon]
        proto = protocol.upper()
        if proto not in PROTOCOLS:
            raise FormatNameError("Protocol", at, "protocol must be one of %s, got %r" % ("/".join(PROTOCOLS), protocol))
        rest, rat = body[colon + 1:], at + colon + 1
        if proto in ("HTTP", "HTTPS"):
            # ProtocolAddressSpecification = "//" Host [":" Port] "/MSMQ"
            m = re.match(r"//([^/\\:]+)(:[0-9]*)?/MSMQ(?=[\\/])", rest, re.IGNORECASE)
            if not m:
                raise FormatNameError("ProtocolAddressSpecification", rat,
                                      "HTTP(S) address must be //Host[:Port]/MSMQ followed by \\ or /")
            if not _VCHARS.match(m.group(1)):
                # Host: "a computer name ... or an IP address" ([MS-MQMQ] 2.1.2), as for OS:
                raise FormatNameError("ProtocolAddressSpecification", rat + 2, "host must be visible ASCII")
            address, path, pat, seps = rest[: m.end()], rest[m.end() + 1:], rat + m.end() + 1, "\\/"
        else:
            bs = rest.find("\\")
            if bs <= 0:
                raise FormatNameError("ProtocolAddressSpecification", rat, "expected address '\\' queue")
            address, path, pat, seps = rest[:bs], rest[bs + 1:], rat + bs + 1, "\\"
            if not _VCHARS.match(address):
                raise FormatNameError("ProtocolAddressSpecification", rat, "address must be visible ASCII")
            if proto == "TCP":
                try:
                    ipaddress.ip_address(address)
                except ValueError:
                    raise FormatNameError("ProtocolAddressSpecification", rat,
                                          "TCP needs an IP address, got %r" % address) from None
        upath = path.upper()
        if upath.startswith("SYSTEM$;"):
            which = upath[8:]
            if which not in _SYSTEM_QUEUES:
                raise FormatNameError("MachineQueuePath", pat + 8, "expected JOURNAL, DEADLETTER or DEADXACT")
            return cls("DIRECT", text, protocol=protocol, address=address, system=True, suffix=which)
        private = False
        for sep in seps:
            if upath.startswith("PRIVATE$" + sep):
                private, path, pat = True, path[9:], pat + 9
                break
        qname_ok = _QCHARS
        suffix = None
        if path.upper().endswith(";JOURNAL"):
            path, suffix = path[:-8], "JOURNAL"
        qname, semi, sub = path.partition(";")
        if not (1 <= len(qname) <= 124 and qname_ok.match(qname)):
            raise FormatNameError("QueueName", pat, "QueueName must be 1*124 allowed characters, got %r" % qname)
        if semi and not (1 <= len(sub) <= 32 and _QCHARS.match(sub)):
            raise FormatNameError("Subqueue", pat + len(qname) + 1, "Subqueue must be 1*32 allowed characters")
        return cls("DIRECT", text, protocol=protocol, address=address, private=private, queue=qname,
                   subqueue=sub if semi else None, suffix=suffix)

    # -- constructors (canonical text: upper-case keywords and GUIDs) -------
    @classmethod
    def public(cls, guid, journal: bool = False) -> "FormatName":
        return cls.parse("PUBLIC=%s%s" % (_gtext(guid), ";JOURNAL" if journal else ""))

    @classmethod  # type: ignore[no-redef]  # (also the name of a field: see __post_init__)
    def private(cls, qm_guid, queue_id: int, journal: bool = False) -> "FormatName":
        if not 0 <= int(queue_id) <= 0xFFFFFFFF:
            raise FormatNameError("PrivateName", 0, "queue number must fit 8 hexadecimal digits")
        return cls.parse("PRIVATE=%s\\%08X%s" % (_gtext(qm_guid), int(queue_id), ";JOURNAL" if journal else ""))

    @classmethod
    def direct(cls, text: str) -> "FormatName":
        """From a direct name with or without its "DIRECT=" prefix (the form
        UserHeader and MQF elements carry it in, "TCP:10.0.0.1\\q")."""
        if text[:7].upper() != "DIRECT=":
            text = "DIRECT=" + text
        return cls.parse(text)

    @classmethod
    def distribution_list(cls, guid, domain: str | None = None) -> "FormatName":
        return cls.parse("DL=%s%s" % (_gtext(guid), "@" + domain if domain else ""))

    @classmethod
    def machine(cls, guid, suffix: str | None = None) -> "FormatName":
        return cls.parse("MACHINE=%s%s" % (_gtext(guid), ";" + suffix if suffix else ""))

    @classmethod
    def connector(cls, guid, xactonly: bool = False) -> "FormatName":
        return cls.parse("CONNECTOR=%s%s" % (_gtext(guid), ";XACTONLY" if xactonly else ""))

    @classmethod
    def multicast(cls, address: str, port: int) -> "FormatName":
        return cls.parse("MULTICAST=%s:%d" % (address, port))

    @classmethod
    def multiple(cls, *elements: "FormatName | str") -> "FormatName":
        return cls.parse(",".join(str(e) for e in elements))

    # -- presentation and comparison -------------------------------------
    @property
    def direct_id(self) -> str | None:
        """A direct name without "DIRECT=" (QUEUE_FORMAT.m_pDirectID)."""
        return self.text[7:] if self.kind == "DIRECT" else None

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return "FormatName(%r)" % self.text

    def _key(self):
        if self.kind == "MULTIPLE":
            return ("MULTIPLE", tuple(e._key() for e in self.elements))
        return (self.kind, self.guid, self.queue_id, self.suffix,
                self.protocol.upper() if self.protocol else None, self.address, self.private, self.system,
                self.queue, self.subqueue, self.domain, self.multicast_address, self.multicast_port)

    def __eq__(self, other) -> bool:
        if not isinstance(other, FormatName):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    @json_ready
    def to_dict(self) -> dict:
        d: dict[str, Any] = {"FormatName": self.text, "Type": self.kind}
        if self.kind == "MULTIPLE":
            d["Elements"] = [e.to_dict() for e in self.elements]
            return d
        for k in ("guid", "queue_id", "suffix", "protocol", "address", "queue", "subqueue", "domain",
                  "multicast_address", "multicast_port"):
            v = getattr(self, k)
            if v is not None:
                d[k] = str(v) if isinstance(v, uuid.UUID) else v
        if self.private:
            d["private"] = True
        if self.system:
            d["system"] = True
        return d


def _gtext(guid) -> str:
    if isinstance(guid, uuid.UUID):
        return str(guid).upper()
    if isinstance(guid, (bytes, bytearray)) and len(guid) == 16:
        return str(uuid.UUID(bytes_le=bytes(guid))).upper()
    if isinstance(guid, str):
        return guid.strip("{}")
    raise FormatNameError("Guid", 0, "not a GUID: %r" % (guid,))
