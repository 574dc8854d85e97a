"""MSMQ format names, [MS-MQMQ] 2.1.

Examples come from the specifications' text (the ABNF of 2.1.2-2.1.7, the
example of 2.1.7, the order-queue names of [MS-MQQB] 2.2.4/2.2.5) and from
the direct names inside the shared vectors.
"""
from __future__ import annotations

import re
import uuid

import pytest
from hypothesis import given, settings, strategies as st

from mqcodec.errors import DecodeError
from mqcodec.msmq.formatname import FormatName, FormatNameError
from mqcodec.msmq.mqf import MQFFormatNameElement

SETTINGS = settings(max_examples=150, deadline=None)
GUID = "6F57E4C2-0A8D-4B2C-9C4D-7E4A1B2C3D4E"
GUID2 = "C626EA11-E6B6-9749-9595-9150557358D1"


def rt(text: str) -> FormatName:
    fn = FormatName.parse(text)
    assert str(fn) == text
    assert FormatName.parse(str(fn)) == fn
    return fn


# ---------------------------------------------------------------- 2.1.2 direct format names

@pytest.mark.parametrize("text, protocol, address, queue, private", [
    ("DIRECT=TCP:10.1.2.3\\myqueue", "TCP", "10.1.2.3", "myqueue", False),             # PublicQueuePath
    ("DIRECT=TCP:10.1.2.3\\PRIVATE$\\orders", "TCP", "10.1.2.3", "orders", True),      # PrivateQueuePath
    ("DIRECT=OS:a04bm02\\q", "OS", "a04bm02", "q", False),                             # [MS-MQQB] 4.1.7
    ("DIRECT=IPX:00000012:00a0234f7500\\q", "IPX", "00000012:00a0234f7500", "q", False),
    ("DIRECT=HTTP://host.example:8080/MSMQ\\q", "HTTP", "//host.example:8080/MSMQ", "q", False),
    ("DIRECT=HTTPS://host/MSMQ\\PRIVATE$\\q", "HTTPS", "//host/MSMQ", "q", True),
    ("DIRECT=http://192.168.56.113/msmq/private$/queuejumper", "http", "//192.168.56.113/msmq",
     "queuejumper", True),                                                             # QueueJumper vector
    ("DIRECT=TCP:::1\\q", "TCP", "::1", "q", False),
])
def test_direct_names(text, protocol, address, queue, private):
    fn = rt(text)
    assert (fn.kind, fn.protocol, fn.address, fn.queue, fn.private) == ("DIRECT", protocol, address, queue, private)
    assert fn.direct_id == text[7:]


def test_direct_journal_subqueue_and_machine_queues():
    fn = rt("DIRECT=TCP:10.1.2.3\\PRIVATE$\\orders;JOURNAL")
    assert fn.suffix == "JOURNAL" and fn.queue == "orders"
    fn = rt("DIRECT=OS:host\\PRIVATE$\\orders;poison")        # 2.1.1 MSMQ 4.0+: QueueName [";" Subqueue]
    assert (fn.queue, fn.subqueue) == ("orders", "poison")
    for which in ("JOURNAL", "DEADLETTER", "DEADXACT"):        # MachineQueuePath
        fn = rt("DIRECT=OS:host\\SYSTEM$;%s" % which)
        assert fn.system and fn.suffix == which


def test_order_queue_names_of_ms_mqqb_2_2_4(vectors):
    # orderQueueName = ("TCP:" ip-address / "SPX:" ipx-address) "\PRIVATE$\order_queue$"
    spec = (vectors.parent / "specs" / "MS-MQQB.md").read_text(encoding="utf-8")
    assert '"\\PRIVATE$\\order_queue$"' in spec
    fn = FormatName.direct("TCP:192.168.1.5\\PRIVATE$\\order_queue$")
    assert (fn.protocol, fn.address, fn.private, fn.queue) == ("TCP", "192.168.1.5", True, "order_queue$")
    fn = FormatName.direct("SPX:0000000A.00A0C9123456\\PRIVATE$\\order_queue$")
    assert fn.protocol == "SPX" and fn.private


def test_direct_name_of_vector_4_1_7(vectors):
    data = (vectors / "msmq" / "4.1.7_user_message_first_222_bytes.bin").read_bytes()
    text = data[0x42:0x42 + 26].decode("utf-16-le").rstrip("\x00")   # annotation: "Value: OS:a04bm02\q"
    fn = FormatName.direct(text)
    assert str(fn) == "DIRECT=OS:a04bm02\\q" and fn.queue == "q"


# ---------------------------------------------------------------- 2.1.3 - 2.1.6

def test_public_private_dl_machine_connector_multicast():
    fn = rt("PUBLIC=%s" % GUID)                           # 2.1.3
    assert fn.guid == uuid.UUID(GUID)
    fn = rt("PRIVATE=%s\\0000001a" % GUID)               # 2.1.4: 1*8HEXDIG
    assert (fn.guid, fn.queue_id) == (uuid.UUID(GUID), 0x1A)
    fn = rt("PRIVATE=%s\\1;JOURNAL" % GUID)
    assert fn.queue_id == 1 and fn.suffix == "JOURNAL"
    fn = rt("DL=%s" % GUID)                              # 2.1.5
    assert fn.domain is None
    fn = rt("DL=%s@corp.example.com" % GUID)
    assert fn.domain == "corp.example.com"
    assert rt("MACHINE=%s" % GUID).kind == "MACHINE"     # 2.1.6
    assert rt("MACHINE=%s;DEADXACT" % GUID).suffix == "DEADXACT"
    assert rt("CONNECTOR=%s" % GUID).kind == "CONNECTOR"
    fn = rt("MULTICAST=224.0.0.1:8080")
    assert (fn.multicast_address, fn.multicast_port) == ("224.0.0.1", 8080)
    assert rt("MULTICAST=239.255.255.255:65535").multicast_port == 65535
    assert rt("public=%s" % GUID.lower()) == FormatName.public(uuid.UUID(GUID))   # keywords: any case


def test_constructors_and_equality():
    g = uuid.UUID(GUID)
    assert str(FormatName.public(g)) == "PUBLIC=" + GUID
    assert str(FormatName.private(g, 0x1A)) == "PRIVATE=%s\\0000001A" % GUID
    assert FormatName.private(g, 0x1A) == FormatName.parse("PRIVATE=%s\\1a" % GUID.lower())
    assert str(FormatName.distribution_list(g, "dom")) == "DL=%s@dom" % GUID
    assert str(FormatName.machine(g)) == "MACHINE=" + GUID
    assert str(FormatName.connector(g)) == "CONNECTOR=" + GUID
    assert str(FormatName.multicast("230.1.2.3", 1801)) == "MULTICAST=230.1.2.3:1801"
    assert FormatName.direct("OS:h\\q") == FormatName.parse("DIRECT=OS:h\\q")
    assert FormatName.public(g) != FormatName.public(uuid.UUID(GUID2))
    assert len({FormatName.public(g), FormatName.parse("PUBLIC=" + GUID.lower())}) == 1


# ---------------------------------------------------------------- 2.1.7 multiple-element

def test_multiple_element_example_of_2_1_7(vectors):
    spec = (vectors.parent / "specs" / "MS-MQMQ.md").read_text(encoding="utf-8")
    example = "DIRECT=ComputerAddress\\QueueName,PUBLIC=QueueGUID,DL=DL_GUID"
    assert example in spec
    # the example is a template: its placeholders are not a protocol nor GUIDs
    with pytest.raises(FormatNameError):
        FormatName.parse(example)
    # filled in, it is "a direct format name, a public format name, and a distribution list format name"
    filled = "DIRECT=TCP:10.0.0.7\\QueueName,PUBLIC=%s,DL=%s" % (GUID, GUID2)
    fn = rt(filled)
    assert fn.kind == "MULTIPLE" and [e.kind for e in fn.elements] == ["DIRECT", "PUBLIC", "DL"]
    assert FormatName.multiple(*fn.elements) == fn


def test_every_abnf_prefix_of_section_2_1_is_accepted(vectors):
    spec = (vectors.parent / "specs" / "MS-MQMQ.md").read_text(encoding="utf-8")
    section = spec[spec.index("## 2.1 MSMQ Queue Names"): spec.index("## 2.2 Structures")]
    prefixes = set(re.findall(r'"([A-Z]+=)"', section))
    assert prefixes == {"DIRECT=", "PUBLIC=", "PRIVATE=", "DL=", "MACHINE=", "CONNECTOR=", "MULTICAST="}
    samples = {"DIRECT=": "OS:h\\q", "PUBLIC=": GUID, "PRIVATE=": GUID + "\\1", "DL=": GUID,
               "MACHINE=": GUID, "CONNECTOR=": GUID, "MULTICAST=": "224.1.1.1:1"}
    for p in prefixes:
        assert rt(p + samples[p]).kind == p[:-1]
    protocols = re.search(r'Protocol = ("TCP".*)', section).group(1)
    for proto in re.findall(r'"([A-Z]+)"', protocols):
        address = {"TCP": "10.0.0.1", "HTTP": "//h/MSMQ", "HTTPS": "//h/MSMQ"}.get(proto, "host")
        assert rt("DIRECT=%s:%s\\q" % (proto, address)).protocol == proto


# ---------------------------------------------------------------- invalid names

@pytest.mark.parametrize("text, field", [
    ("", "FormatName"),
    ("QUEUE=abc", "FormatName"),
    ("PUBLIC=not-a-guid", "QueueGuid"),
    ("PUBLIC=%s;DEADLETTER" % GUID, "PublicName"),
    ("PRIVATE=%s\\123456789" % GUID, "PrivateName"),      # 1*8HEXDIG
    ("PRIVATE=%s\\xyz" % GUID, "PrivateName"),
    ("PRIVATE=%s" % GUID, "PrivateName"),
    ("DL=%s@" % GUID, "DomainName"),
    ("DIRECT=FTP:host\\q", "Protocol"),
    ("DIRECT=TCP:not-an-ip\\q", "ProtocolAddressSpecification"),
    ("DIRECT=OS:host", "ProtocolAddressSpecification"),
    ("DIRECT=HTTP://host/q", "ProtocolAddressSpecification"),   # "/MSMQ" is required
    ("DIRECT=OS:host\\" + "q" * 125, "QueueName"),              # 1*124
    ("DIRECT=OS:host\\a,b", "FormatName"),                      # "," splits elements
    ("DIRECT=OS:host\\a\"b", "QueueName"),                      # double quote excluded
    ("DIRECT=OS:host\\q;" + "s" * 33, "Subqueue"),              # 1*32
    ("DIRECT=OS:host\\SYSTEM$;ORDERS", "MachineQueuePath"),
    ("MULTICAST=223.0.0.1:80", "Multicast"),                    # dec-octet1 is 224-239
    ("MULTICAST=240.0.0.1:80", "Multicast"),
    ("MULTICAST=224.0.0.256:80", "Multicast"),
    ("MULTICAST=224.0.0.1:65536", "Multicast"),
    ("MULTICAST=224.0.0.01:80", "Multicast"),                   # no leading zeros
    ("PUBLIC=%s,MACHINE=%s" % (GUID, GUID2), "MultipleElementName"),   # read-only queue in a list
    ("PUBLIC=%s,DIRECT=OS:h\\q;JOURNAL" % GUID, "MultipleElementName"),
])
def test_invalid_names(text, field):
    with pytest.raises(FormatNameError) as ei:
        FormatName.parse(text)
    e = ei.value
    assert isinstance(e, DecodeError) and e.structure == "FormatName" and e.field == field
    assert 0 <= e.offset <= len(text)


def test_non_text_is_rejected():
    with pytest.raises(FormatNameError):
        FormatName.parse(b"PUBLIC=x")  # type: ignore[arg-type]


# ---------------------------------------------------------------- MQF element <-> FormatName

def test_mqf_elements_carry_format_names():
    for fn in (FormatName.public(uuid.UUID(GUID)), FormatName.private(uuid.UUID(GUID), 7),
               FormatName.direct("TCP:10.1.2.3\\PRIVATE$\\q"), FormatName.distribution_list(uuid.UUID(GUID))):
        el = MQFFormatNameElement.from_format_name(fn, 12)
        raw = el.encode()
        back, n = MQFFormatNameElement.decode(b"\0" * 12 + raw, 12, 12 + len(raw), base=0)
        assert n == 12 + len(raw) and back.format_name == fn and back.encode() == raw


# ---------------------------------------------------------------- hypothesis

_qchar = st.sampled_from([chr(c) for c in [0x21] + list(range(0x23, 0x2B)) + list(range(0x2D, 0x3B))
                          + list(range(0x3C, 0x5C)) + list(range(0x5D, 0x7F))])
queue_names = st.text(_qchar, min_size=1, max_size=124).filter(lambda q: q.upper() != "SYSTEM$"
                                                                and not q.upper().startswith(("PRIVATE$", "SYSTEM$;")))


@st.composite
def names(draw, single_only=False):
    kind = draw(st.sampled_from(["PUBLIC", "PRIVATE", "DIRECT", "DL", "CONNECTOR", "MULTICAST"]
                                + ([] if single_only else ["MACHINE"])))
    g = uuid.UUID(bytes=draw(st.binary(min_size=16, max_size=16)))
    if kind == "PUBLIC":
        return FormatName.public(g)
    if kind == "PRIVATE":
        return FormatName.private(g, draw(st.integers(0, 0xFFFFFFFF)))
    if kind == "DL":
        return FormatName.distribution_list(g, draw(st.one_of(st.none(), st.text(
            st.sampled_from("abcdefghij.-_"), min_size=1, max_size=30))))
    if kind == "MACHINE":
        return FormatName.machine(g, draw(st.sampled_from([None, "JOURNAL", "DEADLETTER", "DEADXACT"])))
    if kind == "CONNECTOR":
        return FormatName.connector(g)
    if kind == "MULTICAST":
        return FormatName.multicast("%d.%d.%d.%d" % (draw(st.integers(224, 239)), draw(st.integers(0, 255)),
                                                     draw(st.integers(0, 255)), draw(st.integers(0, 255))),
                                    draw(st.integers(0, 65535)))
    q = draw(queue_names)
    q = q if ";" not in q else q.split(";")[0] or "q"
    prefix = draw(st.sampled_from(["", "PRIVATE$\\"]))
    return FormatName.direct("OS:%s\\%s%s" % (draw(st.text(st.sampled_from("abcxyz019-"), min_size=1,
                                                                           max_size=15)), prefix, q))


@SETTINGS
@given(names())
def test_parse_format_roundtrip(fn):
    assert FormatName.parse(str(fn)) == fn
    assert str(FormatName.parse(str(fn))) == str(fn)


@SETTINGS
@given(st.lists(names(single_only=True), min_size=2, max_size=5))
def test_multiple_element_roundtrip(elements):
    fn = FormatName.multiple(*elements)
    assert fn.kind == "MULTIPLE" and list(fn.elements) == elements
    assert FormatName.parse(str(fn)) == fn


@SETTINGS
@given(st.text(max_size=80))
def test_arbitrary_text_gives_a_name_or_a_format_name_error(text):
    try:
        fn = FormatName.parse(text)
    except FormatNameError:
        return
    assert str(fn) == text
