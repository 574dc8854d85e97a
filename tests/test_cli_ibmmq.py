"""``mqcodec decode --protocol mq|pcf`` run as a subprocess."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from test_ibmmq_headers import MQMD1_LAYOUT, md_values, pack, rfh2_bytes


def run(*args, input=None):
    return subprocess.run([sys.executable, "-m", "mqcodec", *args], capture_output=True, input=input)


@pytest.fixture()
def jms_message(tmp_path):
    data = pack(MQMD1_LAYOUT, md_values(Format="MQHRF2", Encoding=273, CodedCharSetId=1208), "little") + \
        rfh2_bytes([b"<mcd><Msd>jms_text</Msd></mcd>  "], "big") + "gr\u00fc\u00df".encode("utf-8")
    path = tmp_path / "msg.bin"
    path.write_bytes(data)
    return path, data


def test_decode_mq_json(jms_message):
    path, _ = jms_message
    r = run("decode", "--protocol", "mq", str(path))
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["StrucId"] == "MD" and d["Format"] == "MQHRF2" and d["PutApplName"] == "amqsput"
    assert d["MsgId"] == bytes(range(1, 25)).hex()
    assert d["Headers"][0]["StrucName"] == "MQRFH2"
    assert d["Headers"][0]["NameValues"][0]["Folder"] == {"mcd": {"Msd": "jms_text"}}
    assert d["BodyFormat"] == "MQSTR" and d["Body"] == "gr\u00fc\u00df" and d["BodyOffset"] == 324 + 36 + 4 + 32


def test_decode_mq_text_and_stdin(jms_message):
    path, data = jms_message
    r = run("decode", "--protocol", "mq", "--format", "text", "--encoding", "little", "--ccsid", "819", "-",
            input=data)
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode("utf-8")
    assert "PutApplName: amqsput" in out and "Format: MQHRF2" in out and "NameValueData:" in out


def test_decode_mq_errors_one_line_exit_2(jms_message, tmp_path):
    path, data = jms_message
    cases = [
        (["--protocol", "mq", "--encoding", "big"], data, "MQMD.Version at offset 4"),
        (["--protocol", "mq"], data[:300], "MQMD.PutApplName at offset 276"),
        (["--protocol", "mq"], data[:330], "MQRFH2.Version at offset 328"),
        (["--protocol", "mq"], b"", "MQMD.StrucId at offset 0"),
        (["--protocol", "mq"], b"junk" * 100, "MQMD.StrucId at offset 0"),
    ]
    for args, blob, expect in cases:
        f = tmp_path / "bad.bin"
        f.write_bytes(blob)
        r = run("decode", *args, str(f))
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        err = r.stderr.decode()
        assert err.count("\n") == 1 and "Traceback" not in err
        assert expect in err, err
        assert r.stdout == b""


def test_decode_mq_lenient(jms_message, tmp_path):
    _, data = jms_message
    f = tmp_path / "cut.bin"
    f.write_bytes(data[:340])
    r = run("decode", "--protocol", "mq", "--lenient", str(f))
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["Headers"] == [] and d["Body"] == data[324:340].hex()
    assert d["Warnings"][0]["structure"] == "MQRFH2"


def test_decode_pcf_vector(vectors):
    pytest.importorskip("mqcodec.ibmmq.pcf")
    r = run("decode", "--protocol", "pcf", "--encoding", "little", str(vectors / "ibmmq" / "pcf_with_cfif.dat"))
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["MQCFH"]["Command"] == 99  # MQCMD_COMMAND_EVENT, per the vectors' README
