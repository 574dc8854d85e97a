"""Report (trace) messages: [MS-MQQB] 3.1.5.8.9 (seed 000_27b947dbf4312be3.txt)
and the report label / body forms of seed 003_870c03f8aa8ff4bb.txt.

Expected strings are written by hand from the ABNF, not produced by the
builder under test.
"""
from __future__ import annotations

import datetime as dt
import re
import uuid

import pytest
from hypothesis import given, settings, strategies as st

from mqcodec.errors import DecodeError, EncodeError
from mqcodec.msmq.queue_manager import QueueManager, MQ_ERROR_QUEUE_NOT_FOUND
from mqcodec.msmq.report import (
    MQMSG_CLASS_REPORT, ConflictLabel, ConflictReportBody, ReceivedByLabel, ReportBody,
    ReportParseError, ReportTime, SentFromLabel, TraceDiscarded, TraceEnqueue, TracedUserMessage,
    after_open_queue, parse_report_body, parse_report_label, public_format_name, send_trace_message,
    trace_message_for,
)

SETTINGS = settings(max_examples=150, deadline=None)

# GUIDs that appear in the MS-MQ* specifications
SRC_QM = uuid.UUID("476f10ed-08f0-4887-b583-59d5cf909979")
TRACE_Q = uuid.UUID("604dcfcd-72f5-46e5-85c1-f3ce69956700")
DEST = "DIRECT=TCP:192.168.1.10\\private$\\orders"

# 11 April 2023 (a Tuesday: that month's "Patch Tuesday", CVE-2023-21554) 23:05:09
T_PM = dt.datetime(2023, 4, 11, 23, 5, 9)


def fields(**over):
    base = dict(SourceQueueManager=SRC_QM, MessageID=0x2A, RC=3, QueueIdentifier=TRACE_Q,
                DestinationQueue=DEST, TR=True)
    base.update(over)
    return TracedUserMessage(**base)


# --- the TraceMessage attributes ----------------------------------------------------------

def test_class_is_report_value_from_ms_mqmq(vectors):
    """seed 000: "TraceMessage.Class is set to Report." -- MQMSG_CLASS_REPORT is
    read from [MS-MQMQ] 2.2.18.1.6 itself."""
    spec = (vectors.parent / "specs" / "MS-MQMQ.md").read_text(encoding="utf-8")
    value = int(re.search(r"MQMSG_CLASS_REPORT = (0x[0-9A-Fa-f]+),", spec).group(1), 16)
    assert value == 0x0001
    trace = trace_message_for(fields(), now=T_PM)
    assert trace.Class == value == MQMSG_CLASS_REPORT


def test_destination_is_public_format_name_of_debug_header_queue():
    """seed 000: "TraceMessage.DestinationQueueFormatName is set to a public format name
    ([MS-MQMQ] section 2.1.3) constructed using the GUID in the
    DebugHeader.QueueIdentifier field."  PublicName = "PUBLIC=" QueueGuid."""
    trace = trace_message_for(fields(), now=T_PM)
    assert trace.DestinationQueueFormatName == "PUBLIC=604DCFCD-72F5-46E5-85C1-F3CE69956700"
    # [MS-MQMQ] 2.1.3: Guid = 8HexDig %x2D 3(4HexDig %x2D) 12HexDig
    assert re.fullmatch(r"PUBLIC=[0-9A-F]{8}-([0-9A-F]{4}-){3}[0-9A-F]{12}", trace.DestinationQueueFormatName)


def test_queue_identifier_from_wire_bytes_is_ms_dtyp_guid_order():
    """A GUID's 16 wire bytes are Data1..Data3 little-endian ([MS-DTYP] 2.3.4)."""
    wire = bytes.fromhex("cdcf4d60f572e54685c1f3ce69956700")
    assert public_format_name(wire) == "PUBLIC=604DCFCD-72F5-46E5-85C1-F3CE69956700"


def test_delivery_is_express():
    """seed 000: "TraceMessage.DeliveryGuarantee is set to Express." """
    assert trace_message_for(fields(), now=T_PM).DeliveryGuarantee == "Express"


def test_label_exact_string_from_abnf():
    """seed 000: label = qm-id %x3A message-id %x3A hops SP "received by" SP computer SP "at"
    SP time-date %x0000; qm-id = first four hex digits of the source queue identifier;
    message-id = 8HEXDIG; hops = 2HEXDIG (UserHeader.Flags.RC); computer = GUID
    (UserHeader.SourceQueueManager); time-date = hour SP ("AM" / "PM") SP date;
    date = day "," month SP 2DIGIT SP year."""
    trace = trace_message_for(fields(), now=T_PM)
    assert trace.Label == ("476F:0000002A:03 received by 476F10ED-08F0-4887-B583-59D5CF909979"
                           " at 11:05:09 PM Tue,Apr 11 23\x00")


@pytest.mark.parametrize("when,expected", [
    # 1 January 2000 was a Saturday; midnight on the 12-hour clock is 12 AM
    (dt.datetime(2000, 1, 1, 0, 0, 0), "12:00:00 AM Sat,Jan 01 00"),
    # 31 December 1999 was a Friday; noon is 12 PM
    (dt.datetime(1999, 12, 31, 12, 30, 5), "12:30:05 PM Fri,Dec 31 99"),
    # 1 January 1970 was a Thursday
    (dt.datetime(1970, 1, 1, 9, 7, 0), "09:07:00 AM Thu,Jan 01 70"),
])
def test_time_date_twelve_hour_reading(when, expected):
    """seed 000: hour = 2DIGIT ":" 2DIGIT [":" 2DIGIT]; time-date = hour SP ("AM" / "PM") SP date.
    Reading taken (docs/msmq-semantics.md): the 12-hour clock, 01..12, seconds written."""
    label = trace_message_for(fields(), now=when).Label
    assert label.endswith(" at " + expected + "\x00")


def test_time_without_seconds_is_allowed_by_the_optional_rule():
    """seed 000: hour = 2DIGIT ":" 2DIGIT [":" 2DIGIT] -- the seconds are optional."""
    label = trace_message_for(fields(), now=T_PM, seconds=False).Label
    assert label.endswith(" at 11:05 PM Tue,Apr 11 23\x00")
    assert parse_report_label(label).time.second is None


def test_label_is_unicode_with_terminating_nul():
    """seed 000: "TraceMessage.Label is set to a Unicode string" ending %x0000: UTF-16LE."""
    trace = trace_message_for(fields(), now=T_PM)
    raw = trace.label_bytes()
    assert raw[:10] == b"4\x007\x006\x00F\x00:\x00"
    assert raw[-4:] == b"3\x00\x00\x00"  # "3" of the year then the %x0000 terminator
    assert len(raw) == 2 * 95  # 94 characters and the terminator


def test_hops_and_message_id_are_hex_fields():
    """seed 000: message-id = 8HEXDIG (hexadecimal form of UserHeader.MessageID);
    hops = 2HEXDIG (UserHeader.Flags.RC, at most 0x1D per [MS-MQMQ] 2.2.19.2)."""
    label = trace_message_for(fields(MessageID=0xDEADBEEF, RC=0x1D), now=T_PM).Label
    assert label.startswith("476F:DEADBEEF:1D received by ")


def test_source_queue_identifier_override_for_qm_id():
    """seed 000: qm-id "MUST be set to the first four hexadecimal digits of the source queue
    identifier" -- by default that of SourceQueueManager, or the one given."""
    label = trace_message_for(fields(SourceQueueIdentifier="c626ea11-e6b6-9749-9595-9150557358d1"),
                              now=T_PM).Label
    assert label.startswith("C626:0000002A:03 received by 476F10ED-")


def test_body_exact_string_from_abnf():
    """seed 000: Report = "<MESSAGE ID>" id "</MESSAGE ID>" CR LF "<TARGET QUEUE>" queue
    "</TARGET QUEUE>" CR LF; id = 8HEXDIG; queue = UserHeader.DestinationQueue."""
    trace = trace_message_for(fields(), now=T_PM)
    assert trace.Body == ("<MESSAGE ID>0000002A</MESSAGE ID>\r\n"
                          "<TARGET QUEUE>DIRECT=TCP:192.168.1.10\\private$\\orders</TARGET QUEUE>\r\n")
    assert trace.body_bytes() == trace.Body.encode("utf-16-le")
    assert trace.body_bytes()[:4] == b"<\x00M\x00"


def test_no_trace_message_without_tr():
    """seed 000: "If the UserMessage.BaseHeader.Flags.TR bit field is set, the protocol MUST
    send a report message" -- and not otherwise."""
    assert trace_message_for(fields(TR=False), now=T_PM) is None


def test_tr_without_queue_identifier_is_a_typed_error():
    """[MS-MQMQ] 2.2.19.1: if TR is set "the DH field MUST also be set"."""
    with pytest.raises(EncodeError) as info:
        trace_message_for(fields(QueueIdentifier=None), now=T_PM)
    assert info.value.field == "DebugHeader.QueueIdentifier"


def test_mapping_input_with_spec_field_paths():
    trace = trace_message_for({"UserHeader.SourceQueueManager": str(SRC_QM), "UserHeader.MessageID": 0x2A,
                               "UserHeader.Flags.RC": 3, "DebugHeader.QueueIdentifier": str(TRACE_Q),
                               "UserHeader.DestinationQueue": DEST, "BaseHeader.Flags.TR": True}, now=T_PM)
    assert trace.Label.startswith("476F:0000002A:03 received by ")


def test_bad_field_values_raise_encode_error():
    for bad in (dict(MessageID=1 << 32), dict(RC=0x100), dict(SourceQueueManager="nope")):
        with pytest.raises(EncodeError):
            trace_message_for(fields(**bad), now=T_PM)


def test_label_length_limit():
    """[MS-MQDMPR] 3.1.1.12: "Label: A text string that MUST NOT exceed 249 characters in length."
    With a GUID computer the label is 94 characters; a long computer name can break the limit."""
    # 16 + 13 + len(computer) + 4 + 25 characters before the terminator
    assert len(trace_message_for(fields(), computer="C" * 191, now=T_PM).Label) == 250
    with pytest.raises(EncodeError) as info:
        trace_message_for(fields(), computer="C" * 192, now=T_PM)
    assert info.value.field == "Label"


# --- Open Queue / Enqueue ------------------------------------------------------------------

def test_open_queue_failure_discards():
    """seed 000: "If the rStatus returned by the Open Queue event is not MQ_OK (0x00000000),
    the protocol MUST discard TraceMessage" """
    trace = trace_message_for(fields(), now=T_PM)
    out = after_open_queue(trace, 0xC00E0003)
    assert isinstance(out, TraceDiscarded) and out.rStatus == 0xC00E0003


def test_open_queue_success_enqueues():
    """seed 000: "otherwise, the protocol MUST generate an Enqueue Message To An Open Queue
    ... event with ... iOpenQueueDescriptor := the rOpenQueueDescriptor returned by the Open
    Queue event, iMessage := TraceMessage" """
    trace = trace_message_for(fields(), now=T_PM)
    out = after_open_queue(trace, 0x00000000, "descriptor")
    assert isinstance(out, TraceEnqueue)
    assert out.iOpenQueueDescriptor == "descriptor" and out.iMessage is trace


def test_send_trace_message_against_model():
    """seed 000: Open Queue with iFormatName := TraceMessage.DestinationQueueFormatName,
    SendAccess, DenyNone; discard when not found, enqueue otherwise."""
    trace = trace_message_for(fields(), now=T_PM)
    qm = QueueManager()
    missing = send_trace_message(trace, qm, current_time=1000)
    assert isinstance(missing, TraceDiscarded) and missing.rStatus == MQ_ERROR_QUEUE_NOT_FOUND == 0xC00E0003
    queue = qm.add_queue(Identifier=TRACE_Q)
    result = send_trace_message(trace, qm, current_time=1000)
    assert result.rStatus == 0
    [msg] = queue.messages()
    assert msg.Class == 0x0001 and msg.DeliveryGuarantee == "Express"
    assert msg.Body == trace.Body.encode("utf-16-le")


# --- packet fields ([MS-MQQB] 3.1.7.1.7) ----------------------------------------------------

def test_to_packet_fields():
    """[MS-MQQB] 3.1.7.1.7: "The MessagePropertiesHeader.MessageClass field MUST be set to
    MQMSG_CLASS_REPORT; the UserHeader.DestinationQueue field MUST be set to
    DebugHeader.QueueIdentifier; and the UserHeader.Flags.DM field MUST be set to 0x0."
    DQ 0x5 is "Public queue" ([MS-MQMQ] 2.2.19.2)."""
    f = trace_message_for(fields(), now=T_PM).to_packet_fields()
    assert f["MessagePropertiesHeader.MessageClass"] == 0x0001
    assert f["UserHeader.Flags.DM"] == 0 and f["UserHeader.Flags.DQ"] == 0x5
    dq = f["UserHeader.DestinationQueue"]
    assert getattr(dq, "PublicQueueIdentifier", dq) == TRACE_Q
    assert f["MessagePropertiesHeader.Label"] == ("476F:0000002A:03 received by 476F10ED-08F0-4887-B583-"
                                                  "59D5CF909979 at 11:05:09 PM Tue,Apr 11 23")


def test_packet_wiring_round_trip():
    """The fields go through the packet codec (encode, then decode) unchanged, and the
    decoded Label / MessageBody parse back to the label and body built."""
    packet = pytest.importorskip("mqcodec.msmq.packet")
    from mqcodec.msmq.base import BaseHeader
    from mqcodec.msmq.properties import MessagePropertiesHeader
    from mqcodec.msmq.user import UserFlags, UserHeader

    trace = trace_message_for(fields(), now=T_PM)
    f = trace.to_packet_fields()
    uh = UserHeader(SourceQueueManager=SRC_QM, MessageID=1,
                    Flags=UserFlags(DQ=f["UserHeader.Flags.DQ"], DM=f["UserHeader.Flags.DM"], MP=1),
                    DestinationQueue=f["UserHeader.DestinationQueue"])
    mp = MessagePropertiesHeader(MessageClass=f["MessagePropertiesHeader.MessageClass"],
                                 Label=f["MessagePropertiesHeader.Label"],
                                 MessageBody=f["MessagePropertiesHeader.MessageBody"])
    wire = packet.encode_packet(packet.Packet("UserMessage", BaseHeader=BaseHeader(), UserHeader=uh,
                                              MessagePropertiesHeader=mp))
    back = packet.decode_packet(wire)
    assert back.MessagePropertiesHeader.label_raw == trace.label_bytes()
    assert parse_report_label(back.MessagePropertiesHeader.label_raw) == trace.label_fields
    assert parse_report_body(back.MessageBody) == trace.body_fields
    assert back.MessagePropertiesHeader.MessageClass == 0x0001
    assert str(back.UserHeader.DestinationQueue.PublicQueueIdentifier).upper() == str(TRACE_Q).upper()


def test_trace_from_spec_example_user_message(vectors):
    """The [MS-MQQB] 4.1.7 example UserMessage (first 222 bytes) decoded by the packet codec:
    its BaseHeader has "MessageTraceable: (.......0........) - Tracing disabled", so no report
    is sent.  Had TR been set, the label would start with the first four hex digits of the
    SourceQueueManager GUID.  Expected values read by hand from the bytes: UserHeader at
    offset 16, SourceQueueManager d1 58 73 55 50 91 95 95 49 97 b6 e6 11 ea 26 c6 is, in the
    [MS-DTYP] 2.3.4 layout (Data1..3 little-endian), 557358D1-9150-9595-4997-B6E611EA26C6;
    MessageID ee 08 00 00 = 0x8EE (the annotation's "MessageID: 2286 (0x8EE)"); Flags
    00 1c 28 00 has RC (bits 0-4) = 0; DestinationQueue "OS:a04bm02\\q" is a direct name."""
    packet = pytest.importorskip("mqcodec.msmq.packet")
    data = (vectors / "msmq" / "4.1.7_user_message_first_222_bytes.bin").read_bytes()
    assert data[16:32] == bytes.fromhex("d15873555091959549 97b6e611ea26c6".replace(" ", ""))
    pkt = packet.decode_packet(data, lenient=True)
    uh = pkt.UserHeader
    fields_ = dict(SourceQueueManager=uh.SourceQueueManager, MessageID=uh.MessageID, RC=uh.Flags.RC,
                   QueueIdentifier=None, DestinationQueue=uh.format_name("DestinationQueue"),
                   TR=bool(pkt.BaseHeader.Flags.TR))
    assert trace_message_for(fields_, now=T_PM) is None
    fields_.update(TR=True, QueueIdentifier=TRACE_Q)
    trace = trace_message_for(fields_, now=T_PM)
    assert trace.Label == ("5573:000008EE:00 received by 557358D1-9150-9595-4997-B6E611EA26C6"
                           " at 11:05:09 PM Tue,Apr 11 23\x00")
    assert trace.Body == ("<MESSAGE ID>000008EE</MESSAGE ID>\r\n"
                          "<TARGET QUEUE>DIRECT=OS:a04bm02\\q</TARGET QUEUE>\r\n")


# --- parsing the seed 003 forms -------------------------------------------------------------

def test_parse_received_by_form():
    """seed 003: "gggg:dddd:hh received by <computer> at <time>" """
    label = parse_report_label("1A2B:0000002A:03 received by 476F10ED-08F0-4887-B583-59D5CF909979"
                               " at 11:05:09 PM Tue,Apr 11 23\x00")
    assert isinstance(label, ReceivedByLabel)
    assert (label.qm_id, label.message_id, label.hops) == (0x1A2B, 0x2A, 3)
    assert label.computer_guid == SRC_QM
    assert label.terminated
    assert label.time.to_datetime() == T_PM


def test_parse_sent_from_form():
    """seed 003: "gggg:dddd:hh sent from <computer> to <address> at <time>" """
    label = parse_report_label("1A2B:0000002A:00 sent from SRV01 to 10.0.0.2 at 09:15 AM Mon,Jan 02 23")
    assert isinstance(label, SentFromLabel)
    assert (label.computer, label.address, label.hops, label.terminated) == ("SRV01", "10.0.0.2", 0, False)
    # 2 January 2023 was a Monday
    assert label.time.to_datetime() == dt.datetime(2023, 1, 2, 9, 15)


def test_parse_conflict_label():
    """seed 003: "when report messages and conflict report message are generated, the label of
    both messages is set to "Report Message Conflict"." """
    assert parse_report_label("Report Message Conflict") == ConflictLabel(terminated=False)
    assert parse_report_label("Report Message Conflict\x00".encode("utf-16-le")) == ConflictLabel(True)


def test_parse_report_body_four_elements():
    """seed 003 report body: MESSAGE ID, TARGET QUEUE, NEXT HOP, HOP COUNT; [MS-MQQB] 3.1.7.1.7
    writes "<HOP COUNT>" hops " </HOP COUNT>" CR LF (note the space)."""
    text = ("<MESSAGE ID>0000002A</MESSAGE ID>\r\n<TARGET QUEUE>" + DEST + "</TARGET QUEUE>\r\n"
            "<NEXT HOP>10.0.0.2</NEXT HOP>\r\n<HOP COUNT>03 </HOP COUNT>\r\n")
    body = parse_report_body(text)
    assert isinstance(body, ReportBody)
    assert body.message_id_value == 0x2A and body.target_queue == DEST
    assert body.next_hop == "10.0.0.2" and body.hop_count == "03 " and body.hop_count_value == 3
    assert body.to_text() == text


def test_parse_conflict_body():
    """seed 003 conflict body: ORIGINAL QUEUE (the report queue holding the report),
    MESSAGE ID, TARGET QUEUE, NEXT HOP."""
    text = ("<ORIGINAL QUEUE>PUBLIC=604DCFCD-72F5-46E5-85C1-F3CE69956700</ORIGINAL QUEUE>\r\n"
            "<MESSAGE ID>0000002A</MESSAGE ID>\r\n<TARGET QUEUE>" + DEST + "</TARGET QUEUE>\r\n"
            "<NEXT HOP>10.0.0.2</NEXT HOP>")
    body = parse_report_body(text.encode("utf-16-le"))
    assert isinstance(body, ConflictReportBody)
    assert body.original_queue.endswith("F3CE69956700") and body.next_hop == "10.0.0.2"
    assert body.trailer == ""
    assert body.to_text() == text


@pytest.mark.parametrize("eol", ["\r\n", "\n"], ids=["crlf", "lf"])
def test_parse_body_with_crlf_or_lf_line_ends(eol):
    """seed 003's report body, its lines ended by CR LF (the ABNF) or by LF alone
    (a body whose line ends were normalised): both parse to the same values, and
    each re-encodes to exactly the text read."""
    lines = ["<MESSAGE ID>0000002A</MESSAGE ID>", "<TARGET QUEUE>" + DEST + "</TARGET QUEUE>",
             "<NEXT HOP> 10.0.0.2 </NEXT HOP>", "<HOP COUNT> 3 </HOP COUNT>"]
    text = eol.join(lines) + eol
    for data in (text, text.encode("utf-16-le")):
        body = parse_report_body(data)
        assert isinstance(body, ReportBody)
        assert (body.message_id_value, body.target_queue, body.next_hop, body.hop_count_value) == (
            0x2A, DEST, " 10.0.0.2 ", 3)
        assert body.line_end == eol and body.trailer == eol
        assert body.to_text() == text
    conflict = eol.join(["<ORIGINAL QUEUE>PUBLIC=604DCFCD-72F5-46E5-85C1-F3CE69956700</ORIGINAL QUEUE>",
                         "<MESSAGE ID>0000002A</MESSAGE ID>", "<TARGET QUEUE>" + DEST + "</TARGET QUEUE>"])
    body = parse_report_body(conflict)
    assert isinstance(body, ConflictReportBody) and body.line_end == eol and body.to_text() == conflict
    assert body.next_hop is None


def test_body_mixed_or_bare_cr_line_ends_are_refused():
    head = "<MESSAGE ID>0000002A</MESSAGE ID>"
    mixed = head + "\n<TARGET QUEUE>" + DEST + "</TARGET QUEUE>\r\n<NEXT HOP>x</NEXT HOP>"
    with pytest.raises(ReportParseError) as e:
        parse_report_body(mixed)
    assert e.value.field == "TARGET QUEUE" and e.value.offset == mixed.index("\r\n<NEXT")
    assert "mixed" in str(e.value) or "not mixed" in str(e.value)
    bare_cr = head + "\r<TARGET QUEUE>" + DEST + "</TARGET QUEUE>"
    with pytest.raises(ReportParseError) as e:
        parse_report_body(bare_cr.encode("utf-16-le"))
    assert e.value.field == "MESSAGE ID" and e.value.offset == 2 * len(head)
    with pytest.raises(EncodeError):
        ReportBody("1", "q", line_end="\r")


def test_parse_trace_body_from_builder_text():
    trace = trace_message_for(fields(), now=T_PM)
    assert parse_report_body(trace.Body) == trace.body_fields
    assert parse_report_label(trace.Label) == trace.label_fields


# --- parse errors: typed, with field and position -------------------------------------------

@pytest.mark.parametrize("text,field,offset", [
    ("476F:0000002A:3 received by X at 11:05 PM Tue,Apr 11 23", "hops", 15),
    ("476G:0000002A:03 received by X at 11:05 PM Tue,Apr 11 23", "qm-id", 3),
    ("476F:0000002A:03 seen by X at 11:05 PM Tue,Apr 11 23", "label", 17),
    ("476F:0000002A:03 received by X at 11:05 PM Tue,Foo 11 23", "month", 47),
    ("476F:0000002A:03 received by X at 11:05 XM Tue,Apr 11 23", "time-date", 40),
    ("476F:0000002A:03 received by X at 11:05 PM Tue,Apr 11 23\x00junk", "label", 57),
    ("476F:0000002A:03 received by X at 11:05 PM Tue,Apr 11 2", "year", 55),
])
def test_label_errors_name_field_and_character_position(text, field, offset):
    with pytest.raises(ReportParseError) as info:
        parse_report_label(text)
    err = info.value
    assert isinstance(err, DecodeError)
    assert (err.structure, err.field, err.offset) == ("ReportLabel", field, offset)
    # the same text as UTF-16LE bytes: the offset is in bytes
    with pytest.raises(ReportParseError) as info2:
        parse_report_label(text.encode("utf-16-le"))
    assert info2.value.offset == 2 * offset


def test_odd_length_and_bad_utf16():
    with pytest.raises(DecodeError) as info:
        parse_report_label(b"4\x007")
    assert info.value.offset == 2
    with pytest.raises(DecodeError) as info:
        parse_report_label(b"4\x00\x00\xdc")  # a lone low surrogate
    assert info.value.offset == 2


@pytest.mark.parametrize("text,field", [
    ("<MESSAGE ID>1</MESSAGE ID>\r\n", "TARGET QUEUE"),
    ("<MESSAGE ID>1</MESSAGE ID><TARGET QUEUE>q</TARGET QUEUE>", "MESSAGE ID"),
    ("<MESSAGE ID>1\r\n</MESSAGE ID>", "MESSAGE ID"),
    ("<TARGET QUEUE>q</TARGET QUEUE>", "MESSAGE ID"),
    ("<MESSAGE ID>1</MESSAGE ID>\r\n<TARGET QUEUE>q</TARGET QUEUE>\r\nxx", "NEXT HOP"),
])
def test_body_errors(text, field):
    with pytest.raises(ReportParseError) as info:
        parse_report_body(text)
    assert info.value.structure == "ReportBody" and info.value.field == field


def test_day_name_must_match_date():
    """date = day "," month ...: 11 April 2023 was a Tuesday, not a Monday."""
    label = parse_report_label("476F:0000002A:03 received by X at 11:05 PM Mon,Apr 11 23")
    with pytest.raises(ReportParseError):
        label.time.to_datetime()


# --- hypothesis ---------------------------------------------------------------------------

hexdig = st.sampled_from("0123456789ABCDEF")
guid_text = st.uuids().map(lambda u: str(u).upper())
token = st.text(st.characters(blacklist_categories=("Cs", "Zs", "Zl", "Zp", "Cc")), min_size=1, max_size=20)
datetimes = st.datetimes(min_value=dt.datetime(1969, 1, 1), max_value=dt.datetime(2068, 12, 31, 23, 59, 59))
report_times = st.builds(
    ReportTime, hour=st.integers(0, 99), minute=st.integers(0, 99), second=st.none() | st.integers(0, 99),
    meridiem=st.sampled_from(["AM", "PM"]), day=st.sampled_from(["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]),
    month=st.sampled_from(["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]),
    day_of_month=st.integers(0, 99), year=st.integers(0, 99))
labels = st.one_of(
    st.builds(ReceivedByLabel, qm_id=st.integers(0, 0xFFFF), message_id=st.integers(0, 0xFFFFFFFF),
              hops=st.integers(0, 0xFF), computer=guid_text | token, time=report_times, terminated=st.booleans()),
    st.builds(SentFromLabel, qm_id=st.integers(0, 0xFFFF), message_id=st.integers(0, 0xFFFFFFFF),
              hops=st.integers(0, 0xFF), computer=token, address=token, time=report_times,
              terminated=st.booleans()),
    st.builds(ConflictLabel, terminated=st.booleans()),
)
element = st.text(st.characters(blacklist_characters="<\r\n", blacklist_categories=("Cs",)), max_size=30)
trailer = st.sampled_from(["\r\n", "", "\r\n\x00", "\x00", "\n", "\n\x00"])
line_end = st.sampled_from(["\r\n", "\n"])
bodies = st.one_of(
    st.builds(ReportBody, message_id=element, target_queue=element, next_hop=st.none(), hop_count=st.none(),
              trailer=trailer, line_end=line_end),
    st.builds(ReportBody, message_id=element, target_queue=element, next_hop=element,
              hop_count=st.none() | element, trailer=trailer, line_end=line_end),
    st.builds(ConflictReportBody, original_queue=element, message_id=element, target_queue=element,
              next_hop=st.none() | element, trailer=trailer, line_end=line_end),
)


@SETTINGS
@given(labels)
def test_label_round_trip(label):
    text = label.to_text()
    assert parse_report_label(text) == label
    assert parse_report_label(text.encode("utf-16-le")) == label


@SETTINGS
@given(bodies)
def test_body_round_trip(body):
    text = body.to_text()
    assert parse_report_body(text) == body
    assert parse_report_body(text.encode("utf-16-le")).to_text() == text


@SETTINGS
@given(datetimes, st.uuids(), st.uuids(), st.integers(0, 0xFFFFFFFF), st.integers(0, 0x1D))
def test_trace_label_round_trip_and_time(when, src, q, mid, rc):
    trace = trace_message_for(fields(SourceQueueManager=src, QueueIdentifier=q, MessageID=mid, RC=rc), now=when)
    label = parse_report_label(trace.label_bytes())
    assert label.message_id == mid and label.hops == rc and label.computer_guid == src
    assert label.qm_id == int(str(src)[:4], 16)
    assert label.time.to_datetime() == when.replace(microsecond=0)
    assert 1 <= label.time.hour <= 12  # the 12-hour reading
    assert trace.DestinationQueueFormatName == "PUBLIC=" + str(q).upper()


@SETTINGS
@given(st.text(max_size=80) | st.binary(max_size=160))
def test_parsers_raise_only_decode_error(data):
    for parse in (parse_report_label, parse_report_body):
        try:
            parse(data)
        except DecodeError:
            pass


@pytest.mark.parametrize("engine", ["py", "c"])
def test_msmq_body_text_of_strings_and_reports(tmp_path, engine):
    """msmq_packets.body_text: the MessageBody as UTF-16LE text where it is a string
    (BodyType VT_BSTR or VT_LPWSTR, the terminating NUL left out) or a report
    message (its body a Unicode string: the TraceMessage built by this module's
    seed semantics, read back with parse_report_body); none for a binary body
    (VT_UI1), an encrypted one (PrivacyLevel 3) or a packet without a body."""
    from mqcodec.capture.writer import TcpConversation, write_pcap
    from mqcodec.convert import ConvertOptions, Converter
    from mqcodec.convert.sinks import TableCollector
    from mqcodec.msmq.base import BaseFlags, BaseHeader
    from mqcodec.msmq.builders import frame_packets, simulate_session
    from mqcodec.msmq.packet import Packet, encode_packet
    from mqcodec.msmq.properties import MessagePropertiesHeader
    from mqcodec.msmq.user import DirectQueueFormatName, UserFlags, UserHeader

    if engine == "c":
        pytest.importorskip("mqcodec._ext.capture_core")
    report = trace_message_for(fields(), now=T_PM)
    session = simulate_session(5, messages=1)
    bodies = [  # (BodyType, MessageClass, PrivacyLevel, body bytes, expected body_text)
        (8, 0, 0, "Bestellung \u00e9\u20ac #42\x00".encode("utf-16-le"), "Bestellung \u00e9\u20ac #42"),
        (31, 0, 0, "<order id='7'/>\x00".encode("utf-16-le"), "<order id='7'/>"),
        (0x11, 0, 0, "binary".encode("utf-16-le"), None),
        (8, 0, 3, "secret".encode("utf-16-le"), None),
        (0, MQMSG_CLASS_REPORT, 0, report.body_bytes(), report.Body.rstrip("\x00")),
    ]
    packets = []
    for n, (vt, cls, privacy, body, _) in enumerate(bodies, start=100):
        uh = UserHeader(SourceQueueManager=SRC_QM, QueueManagerAddress=TRACE_Q, SentTime=1_700_000_000 + n,
                        MessageID=n, Flags=UserFlags(DM=0, DQ=7, MP=1), DestinationQueue=DirectQueueFormatName(
                            "TCP:10.0.0.2\\PRIVATE$\\orders"))
        mp = MessagePropertiesHeader(Label="m%d" % n, BodyType=vt, MessageClass=cls, PrivacyLevel=privacy,
                                     MessageBody=body)
        packets.append(encode_packet(Packet("UserMessage", BaseHeader(Flags=BaseFlags(PR=3)), UserHeader=uh,
                                            MessagePropertiesHeader=mp)))
    c = TcpConversation(("10.0.0.1", 40100), ("10.0.0.2", 1801), mss=1400)
    pk = c.handshake() + c.send(0, session.initiator + frame_packets(packets)) + c.send(1, session.acceptor)
    path = tmp_path / "bodies.pcap"
    with open(path, "wb") as f:
        write_pcap(f, pk)
    tables = TableCollector()
    conv = Converter(tables, ConvertOptions(capture_impl=engine))
    conv.add_capture(path, name="bodies")
    rows = tables.table("msmq_packets").to_pylist()
    users = [r for r in rows if r["kind"] == "UserMessage" and r["user_message_id"] >= 100]
    assert [r["error"] for r in users] == [None] * len(bodies)
    assert [r["body_text"] for r in users] == [b[4] for b in bodies]
    assert all(r["body_text"] is None for r in rows if r["kind"] != "UserMessage")
    parsed = parse_report_body(users[-1]["body_text"])
    assert parsed.message_id == "%08X" % 0x2A and parsed.target_queue == DEST
