"""mq_messages.rfh2_folders: the NameValueData folders of a message's MQRFH2
headers (what a JMS message carried besides its body).

Outside facts: tshark's ``mq.rfh.string`` on the real capture (a JMS client's
MQPUTs: ``<mcd>``, ``<jms>`` and ``<usr>`` folders); the pure message decoder
(``mqcodec.ibmmq.decode_message``: its MQRFH2 ``folders``) on messages built
with the header constructors in both byte orders, MQMD versions 1 and 2,
NameValueCCSIDs UTF-8, UTF-16, ISO 8859-1 and EBCDIC, and chains the
vectorized walk leaves to that decoder (MQDLH then MQRFH2, two MQRFH2s, the
batch corpus of tests/test_batch_mq.py).
"""
from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest

from mqcodec import ibmmq
from mqcodec.batch import decode_mq_batch
from mqcodec.convert import ConvertOptions, Converter
from mqcodec.convert.converter import _rfh2_folders
from mqcodec.convert.sinks import TableCollector
from mqcodec.ibmmq.headers import MQDLH, MQMD, MQRFH2
from mqcodec.ibmmq.message import MQMessage

from test_batch_mq import corpus

REAL = Path(__file__).resolve().parent.parent.parent / "shared" / "captures" / "ibmmq_jms_client_1414.pcap"
TSHARK = shutil.which("tshark")
ENC_BIG, ENC_LITTLE = 273, 546          # MQENC_* (cmqc.h): normal / reversed integers


def _pure(record: bytes):
    """The pure decoder's folders of every MQRFH2 of ``record``, or None without one."""
    headers = ibmmq.decode_message(record).headers
    if not any(h.NAME == "MQRFH2" for h in headers):
        return None
    return [f for h in headers if h.NAME == "MQRFH2" for f in h.folders if isinstance(f, str)]


def _ours(records: list, md_only=None) -> list:
    table = decode_mq_batch(records)
    data = pa.array(records, pa.binary())
    md_only = pa.array(md_only or [False] * len(records))
    return _rfh2_folders(data, table, md_only).to_pylist()


def _random_messages(seed: int, count: int) -> list:
    rnd = random.Random(seed)
    folder_texts = ["<mcd><Msd>jms_text</Msd></mcd>", "<jms><Dst>queue:///Q.%d</Dst><Tms>%d</Tms></jms>",
                    "<usr><k%d>v\u00e9</k%d></usr>", "<usr/>", "", "<psc><Command>Publish</Command></psc>"]
    out = []
    for i in range(count):
        enc = rnd.choice((ENC_BIG, ENC_LITTLE))
        nv = rnd.choice((1208, 1208, 1200, 819, 500, 1047))
        folders = []
        for _ in range(rnd.randrange(0, 5)):
            t = rnd.choice(folder_texts)
            if "%d" in t:
                t = t % ((i,) * t.count("%d"))
            if nv in (819, 500, 1047):
                t = t.replace("\u00e9", "e")
            folders.append(t)
        md = MQMD(Version=rnd.choice((1, 2)), Format="MQHRF2", Encoding=enc, CodedCharSetId=1208)
        headers: list = [MQRFH2(folders=folders, Format="MQSTR", Encoding=rnd.choice((ENC_BIG, ENC_LITTLE)),
                                CodedCharSetId=1208, NameValueCCSID=nv)]
        shape = rnd.random()
        if shape < 0.1:     # a dead-letter header first: the chain the vectorized walk leaves to the decoder
            md = MQMD(Version=1, Format="MQDEAD", Encoding=enc, CodedCharSetId=819)
            headers.insert(0, MQDLH(Reason=2053, DestQName="FULL.Q", Format="MQHRF2", Encoding=enc,
                                    CodedCharSetId=1208))
        elif shape < 0.2:   # two MQRFH2s
            headers[0] = MQRFH2(folders=folders, Format="MQHRF2", Encoding=enc, CodedCharSetId=1208,
                                NameValueCCSID=nv)
            headers.append(MQRFH2(folders=["<usr><second>2</second></usr>"], Format="MQSTR", Encoding=enc,
                                  CodedCharSetId=1208))
        out.append(MQMessage(md, headers, "body %d" % i, md_encoding=enc, md_ccsid=819).encode())
    return out


@pytest.mark.parametrize("seed", [1, 2])
def test_folders_are_the_pure_decoders(seed):
    records = _random_messages(seed, 400)
    expected = [_pure(r) for r in records]
    assert _ours(records) == expected
    assert sum(len(e or []) for e in expected) > 500 and any(e == [] for e in expected)


def test_folders_of_the_batch_corpus(vectors):
    records = [r for r, _ in corpus(vectors).values()]
    expected = []
    for r in records:
        try:
            expected.append(_pure(r))
        except Exception:   # noqa: BLE001  (a corpus message the pure decoder refuses: no row of folders)
            expected.append("refused")
    got = _ours(records)
    assert [g for g, e in zip(got, expected) if e != "refused"] == [e for e in expected if e != "refused"]
    assert sum(e is not None and e != "refused" for e in expected) >= 4


def test_an_mqrfh2_without_folders_has_an_empty_list_and_unknown_ccsids_no_text():
    """A call whose every MQRFH2 is empty gives [] (not null); a folder whose
    NameValueCCSID has no converter is not text (the pure decoder keeps its bytes)."""
    empty = MQMessage(MQMD(Format="MQHRF2", Encoding=ENC_LITTLE), [MQRFH2(folders=[], Format="MQSTR")], "b",
                      md_encoding=ENC_LITTLE, md_ccsid=819).encode()
    assert _ours([empty, empty]) == [[], []] == [_pure(empty)] * 2
    odd = MQMessage(MQMD(Format="MQHRF2", Encoding=ENC_LITTLE), [MQRFH2(
        folders=[b"<usr>\x01\x02</usr>"], Format="MQSTR", NameValueCCSID=4242)], "b", md_encoding=ENC_LITTLE,
        md_ccsid=819).encode()
    assert _ours([odd, empty]) == [[], []] == [_pure(odd), _pure(empty)]


def test_rows_without_their_body_or_that_failed_have_none():
    records = _random_messages(3, 6)
    cut = records[0][:400]                 # the MQRFH2 cut short: the batch decoder reports an error
    got = _ours(records + [cut], md_only=[True] + [False] * 6)
    assert got[0] is None and got[-1] is None
    assert got[1:6] == [_pure(r) for r in records[1:6]]


@pytest.mark.skipif(TSHARK is None or not REAL.exists(), reason="tshark or the shared capture is missing")
@pytest.mark.parametrize("engine", ["py", "c"])
def test_real_capture_folders_are_tsharks(engine):
    if engine == "c":
        pytest.importorskip("mqcodec._ext.capture_core")
    out = subprocess.run([TSHARK, "-r", str(REAL), "-Y", "mq.rfh.string", "-T", "fields", "-E", "occurrence=a",
                          "-E", "aggregator=|", "-e", "frame.number", "-e", "mq.rfh.string"],
                         capture_output=True, text=True, check=True).stdout
    theirs = {int(f): [t.rstrip(" \x00") for t in s.split("|")]
              for f, s in (line.split("\t") for line in out.splitlines())}
    tables = TableCollector()
    conv = Converter(tables, ConvertOptions(capture_impl=engine))
    conv.add_capture(REAL, name="real")
    rows = tables.table("mq_messages").to_pylist()
    ours = {r["frame"]: r["rfh2_folders"] for r in rows if r["rfh2_folders"] is not None}
    assert ours == theirs and len(ours) == 8
    assert all(f[0] == "<mcd><Msd>jms_text</Msd></mcd>" and f[2].startswith("<usr>") for f in ours.values())


@pytest.mark.skipif(not REAL.exists(), reason="the shared capture is missing")
def test_duckdb_reads_a_jms_destination(tmp_path):
    """docs/tables.md's query: each JMS message's destination out of its <jms> folder."""
    duckdb = pytest.importorskip("duckdb")
    from mqcodec.convert import convert

    convert([str(REAL)], str(tmp_path / "o"))
    source = "read_parquet('%s/mq_messages/**/*.parquet')" % (tmp_path / "o")
    got = duckdb.sql("SELECT frame, regexp_extract(list_filter(rfh2_folders, lambda f: f LIKE '<jms>%')[1], "
                     "'<Dst>(.*)</Dst>', 1) FROM " + source + " WHERE rfh2_folders IS NOT NULL ORDER BY frame"
                     ).fetchall()
    assert len(got) == 8 and {d for _, d in got} == {"queue:///UNIFORM.QUEUE"}
