"""`mqcodec decode --protocol msmq`: JSON and text output, one-line errors, exit 2."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest


def run(*args):
    return subprocess.run([sys.executable, "-m", "mqcodec", *args], capture_output=True)


def test_session_ack_json(vectors):
    r = run("decode", "--protocol", "msmq", str(vectors / "msmq" / "4.1.8_session_ack.bin"))
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["packet"] == "SessionAck"
    assert d["BaseHeader"]["PacketSize"] == 36
    assert d["BaseHeader"]["Signature"] == 0x524F494C
    assert d["InternalHeader"]["Flags"]["PT"] == 1
    assert d["SessionHeader"]["AckSequenceNumber"] == 1
    assert d["SessionHeader"]["WindowSize"] == 64


def test_ping_json(vectors):
    r = run("decode", "--protocol", "msmq", "--format", "json", str(vectors / "msmq" / "4.1.1_ping_request.bin"))
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["packet"] == "Ping" and d["PingPacket"]["Cookie"] == 4 and d["PingPacket"]["Signature"] == 0x5548


def test_establish_connection_text(vectors):
    r = run("decode", "--protocol", "msmq", "--format", "text",
            str(vectors / "msmq" / "4.1.3_establish_connection_request.bin"))
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    assert "packet: EstablishConnection" in out
    assert "TimeStamp: 501140046" in out
    assert "PacketSize: 572" in out


def test_truncated_user_message_is_one_line_exit_2(vectors):
    r = run("decode", "--protocol", "msmq", str(vectors / "msmq" / "4.1.7_user_message_first_222_bytes.bin"))
    assert r.returncode == 2
    assert r.stdout == b""
    lines = r.stderr.decode().strip().splitlines()
    assert len(lines) == 1
    assert "BaseHeader.PacketSize" in lines[0] and "offset 8" in lines[0]


def test_truncated_user_message_lenient(vectors):
    r = run("decode", "--protocol", "msmq", "--lenient",
            str(vectors / "msmq" / "4.1.7_user_message_first_222_bytes.bin"))
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["truncated"] is True
    assert d["UserHeader"]["MessageID"] == 2286
    assert d["UserHeader"]["DestinationQueue"]["FormatName"] == "DIRECT=OS:a04bm02\\q"
    assert d["MessagePropertiesHeader"]["Label"] == "mqsender label"
    assert d["MessagePropertiesHeader"]["MessageSize"] == 2000
    assert any(w["field"] == "PacketSize" for w in d["warnings"])


@pytest.mark.parametrize("name", ["V9_queuejumper_poc.bin", "V11_noisefest_fullsignature.bin",
                                  "V12_msf_queuejumper_prefix240.bin"])
def test_malformed_one_line(vectors, name):
    r = run("decode", "--protocol", "msmq", str(vectors / "msmq" / "malformed" / name))
    assert r.returncode == 2
    assert b"Traceback" not in r.stderr
    line = r.stderr.decode().strip()
    assert len(line.splitlines()) == 1 and "offset" in line
    r = run("decode", "--protocol", "msmq", "--lenient", str(vectors / "msmq" / "malformed" / name))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["warnings"]


def test_garbage_from_stdin():
    r = subprocess.run([sys.executable, "-m", "mqcodec", "decode", "--protocol", "msmq", "-"],
                       input=b"GET / HTTP/1.1\r\n\r\n", capture_output=True)
    assert r.returncode == 2
    assert r.stderr.decode().strip().startswith("mqcodec: decode error: BaseHeader.")


def _label_with_lone_surrogate() -> bytes:
    # a valid UserMessage whose UTF-16 label holds a lone high surrogate (D800), as a
    # crafted or damaged packet may: MSMQ strings are kept as sent (surrogatepass)
    from mqcodec.msmq import BaseFlags, BaseHeader, encode_packet
    from mqcodec.msmq.packet import Packet
    from mqcodec.msmq.properties import MessagePropertiesHeader
    from mqcodec.msmq.user import DirectQueueFormatName, UserFlags, UserHeader
    import uuid

    uh = UserHeader(SourceQueueManager=uuid.UUID(int=1), QueueManagerAddress=uuid.UUID(int=2), SentTime=1,
                    MessageID=1, Flags=UserFlags(DQ=7, MP=1), DestinationQueue=DirectQueueFormatName("TCP:10.0.0.1\\q"))
    pkt = Packet("UserMessage", BaseHeader(Flags=BaseFlags(PR=3)), UserHeader=uh,
                 MessagePropertiesHeader=MessagePropertiesHeader(Label="ab", BodyType=0x11, MessageBody=b"b"))
    raw = encode_packet(pkt)
    i = raw.find("ab".encode("utf-16-le"))
    return raw[:i] + b"\x00\xd8" + raw[i + 2:]          # 'a' -> U+D800


def test_lone_surrogate_is_escaped_not_a_crash(tmp_path):
    # regression (audit F1): print() of a lone surrogate raised UnicodeEncodeError, exit 1
    from mqcodec.msmq import decode_packet

    raw = _label_with_lone_surrogate()
    label = decode_packet(raw).MessagePropertiesHeader.Label
    assert label == "\ud800b"
    f = tmp_path / "p.bin"
    f.write_bytes(raw)
    r = run("decode", "--protocol", "msmq", str(f))
    assert r.returncode == 0, r.stderr
    assert b"\\ud800b" in r.stdout                      # the JSON escape of that code unit
    assert json.loads(r.stdout)["MessagePropertiesHeader"]["Label"] == label
    r = run("decode", "--protocol", "msmq", "--format", "text", str(f))
    assert r.returncode == 0, r.stderr
    assert b"\\ud800b" in r.stdout
