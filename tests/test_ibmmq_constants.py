"""mqcodec.ibmmq.constants: the tables checked against outside sources.

* Wireshark: ``tshark -G values`` prints the value_strings of its IBM MQ
  dissectors (``packet-mq.c``, ``packet-mq-pcf.c``), mostly under IBM's own
  names.  Every name/value pair it knows for a field that maps to one of our
  families is compared with ours (``test_tshark_field_agrees``); coverage per
  field is printed at the end of the run (see tests/conftest.py).
* IBM's documentation: the values in the unit tests below are quoted from the
  IBM MQ "Constants" reference pages (MQROUTE_*, MQOPER_*, MQCMD_*, MQIACF_*,
  MQRC_*) and the trace-route reference (shared/seeds/004_*).
* The shared PCF test vectors (shared/vectors/ibmmq): every parameter id in
  them must have a name of the family its structure type calls for.
"""
from __future__ import annotations

import re
import struct
import subprocess
import sys
from collections import defaultdict

import pytest
from hypothesis import given, settings, strategies as st

from mqcodec.ibmmq import constants as C

import conftest  # tests/conftest.py: CONSTANTS_COVERAGE is printed at the end of the run

# -- the tshark cross-check ------------------------------------------------------

PARAM = C.parameter_families()

#: tshark field -> families of ours that name the same values.
TSHARK_FIELDS: dict[str, tuple[str, ...]] = {
    "mqpcf.parm.id": PARAM,               # PCF parameter identifiers (all kinds)
    "mq.inq.sel": PARAM,                  # MQINQ selectors (MQIA_*/MQCA_*)
    "mqpcf.cfh.reasoncode": ("MQRC",),    # MQRC_* and MQRCCF_*
    "mq.api.reasoncode": ("MQRC",),
    "mq.msgasy.reasoncod": ("MQRC",),
    "mqpcf.cfh.command": ("MQCMD",),
    "mqpcf.cfh.type": ("MQCFT",),
    "mqpcf.parm.type": ("MQCFT",),
    "mqpcf.cfh.compcode": ("MQCC",),
    "mq.api.completioncode": ("MQCC",),
    "mqpcf.cfh.control": ("MQCFC",),
    "mqpcf.filter.op": ("MQCFOP",),
    "mq.md.msgtype": ("MQMT",),
    "mq.md.persistence": ("MQPER",),
    "mq.lpoo.defpersist": ("MQPER",),
    "mq.fopa.defpersistence": ("MQPER",),
    "mq.md.appltype": ("MQAT",),
    "mq.tm.appltype": ("MQAT",),
    "mq.dlh.putappltype": ("MQAT",),
    "mq.conn.apptype": ("MQAT",),
    "mq.od.objtype": ("MQOT",),
    "mq.od.resolvedobjtype": ("MQOT",),
    "mq.md.ccsid": ("MQCCSI",),
    "mq.dlh.ccsid": ("MQCCSI",),
    "mq.head.ccsid": ("MQCCSI",),
    "mq.id.ccsid": ("MQCCSI",),
    "mq.msgreq.ccsid": ("MQCCSI",),
    "mq.rfh.ccsid": ("MQCCSI",),
    "mq.tsh.ccsid": ("MQCCSI",),
    "mqpcf.parm.ccsid": ("MQCCSI",),
    "mq.lpoo.defputresptype": ("MQPRT",),
    "mq.fopa.defputresponsetype": ("MQPRT",),
    "mq.lpoo.defreadahead": ("MQREADA",),
    "mq.fopa.defreadahaed": ("MQREADA",),  # sic: Wireshark's field name
    "mq.fopa.propertycontrol": ("MQPROP",),
    "mq.uid.sidtyp": ("MQSIDT",),
    "mq.cih.adsdescr": ("MQCADSD",),
    "mq.cih.converstask": ("MQCCT",),
    "mq.cih.getwaitintv": ("MQCGWI", "MQWI"),
    "mq.cih.linktype": ("MQCLT",),
    "mq.cih.outdatalen": ("MQCODL",),
    "mq.cih.taskendstatus": ("MQCTES",),
    "mq.cih.uowcontrols": ("MQCUOWC",),
}

#: Fields every tshark that dissects MQ PCF has; the others may come and go
#: between Wireshark versions (absent -> that case is skipped, not failed).
CORE_FIELDS = ("mqpcf.parm.id", "mqpcf.cfh.reasoncode", "mqpcf.cfh.command", "mqpcf.cfh.type",
               "mq.md.msgtype", "mq.md.persistence")

#: MQ value_strings of tshark that have no IBM constant family: values of the
#: FAP (the client/server wire protocol), XA return codes, display-only strings.
NOT_IBM_FAMILIES = {"mq.tsh.type", "mq.status.code", "mq.notif.code", "mq.spi.verb", "mq.spqo.verb",
                    "mq.spai.mode", "mq.xa.returnvalue", "mq.tsh.byteorder", "mq.conn.options"}

#: tshark names that differ from every IBM name for the same value, with why
#: they are accepted.  Empty for Wireshark 4.0 (checked: 0 needed); an entry is
#: "tshark name" -> "our name: reason".
EXEMPT: dict[str, str] = {}

#: Lowest share of a field's tshark values we must name (measured: 100% for
#: every field with Wireshark 4.0.17; the floor leaves room for a newer
#: Wireshark knowing a handful of names newer than our headers).
COVERAGE_FLOOR = 0.95

_IBM_NAME = re.compile(r"^MQ[A-Z0-9]+_[A-Z0-9_]+$")


@pytest.fixture(scope="module")
def tshark_values(tshark) -> dict[str, list[tuple[int, str]]]:
    """{field: [(value, string), ...]} of every mq/mqpcf value_string.

    ``tshark -G values`` lines: ``V<TAB>field<TAB>value<TAB>string`` for
    value_strings, ``R<TAB>field<TAB>low<TAB>high<TAB>string`` for ranges (a
    range of one value is a value; wider ranges name no single value).
    """
    out = subprocess.run([tshark, "-G", "values"], capture_output=True, text=True, timeout=120, check=True).stdout
    values: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for line in out.splitlines():
        parts = line.split("\t")
        if len(parts) < 4 or not parts[1].startswith(("mq.", "mqpcf.")):
            continue
        if parts[0] == "V":
            values[parts[1]].append((int(parts[2], 0), parts[3]))
        elif parts[0] == "R" and len(parts) >= 5 and parts[2] == parts[3]:
            values[parts[1]].append((int(parts[2], 0), parts[4]))
    assert values, "tshark -G values printed no mq/mqpcf value_strings"
    return dict(values)


def _compare(field: str, entries: list[tuple[int, str]]):
    fams = [C.FAMILIES[p] for p in TSHARK_FIELDS[field]]
    stats = dict(total=len(entries), named=0, same=0, alias=0, display=0)
    problems = []
    for value, text in entries:
        value &= 0xFFFFFFFF
        owner = next((f for f in fams if text in f), None)
        ours = [n for f in fams for n in f.names_of(value)]
        if owner is not None:  # tshark shows a name we have: it must be that value
            if owner.value_of(text) & 0xFFFFFFFF != value:
                problems.append("%s: tshark %s = %#x, ours = %#x" % (field, text, value, owner.value_of(text)))
                continue
            stats["named"] += 1
            if C.is_range_marker(text) or owner.name_of(value) == text:
                stats["same"] += 1
            else:
                stats["alias"] += 1
        elif _IBM_NAME.match(text):
            if ours and text in EXEMPT:
                stats["named"] += 1
                stats["alias"] += 1
            elif ours:
                problems.append("%s: value %#x is %s in tshark but %s here" % (field, value, text, ours))
            # else: a value we do not name -> lowers coverage only
        else:  # a display string, not an IBM name: only the value can be checked
            if ours:
                stats["named"] += 1
                stats["display"] += 1
    return stats, problems


@pytest.mark.tshark
@pytest.mark.parametrize("field", sorted(TSHARK_FIELDS))
def test_tshark_field_agrees(tshark_values, field):
    entries = tshark_values.get(field)
    if not entries:
        if field in CORE_FIELDS:
            pytest.fail("tshark has no value_string for %s" % field)
        conftest.CONSTANTS_COVERAGE.append("%-28s absent from this tshark" % field)
        pytest.skip("this tshark has no value_string for %s" % field)
    stats, problems = _compare(field, entries)
    coverage = stats["named"] / stats["total"]
    conftest.CONSTANTS_COVERAGE.append(
        "%-28s %5d/%-5d tshark values named (%5.1f%%): %d same name, %d another IBM alias, %d display strings"
        % (field, stats["named"], stats["total"], 100 * coverage, stats["same"], stats["alias"], stats["display"]))
    assert not problems, "\n".join(problems)
    assert coverage >= COVERAGE_FLOOR, "%s: only %.1f%% of tshark's values named" % (field, 100 * coverage)


@pytest.mark.tshark
def test_every_tshark_field_with_ibm_names_is_checked(tshark_values):
    """A new Wireshark field showing IBM constant names must be added above."""
    unmapped = []
    for field, entries in tshark_values.items():
        if field in TSHARK_FIELDS or field in NOT_IBM_FAMILIES:
            continue
        if any(_IBM_NAME.match(text) for _, text in entries):
            unmapped.append(field)
    assert not unmapped, "tshark fields with IBM names not cross-checked: %s" % unmapped


@pytest.mark.tshark
def test_tshark_parameter_ids_cover_ours(tshark_values):
    """The other direction, for the record: how many of our parameter ids
    Wireshark knows (ours are newer: IBM MQ 9.4/10 headers)."""
    theirs = {v for v, _ in tshark_values["mqpcf.parm.id"]}
    ours = {C.FAMILIES[p].value_of(n) for p in PARAM for n in C.FAMILIES[p] if not C.is_range_marker(n)}
    known = len(ours & theirs)
    conftest.CONSTANTS_COVERAGE.append(
        "%-28s %5d/%-5d of our parameter ids are known to tshark (%5.1f%%)"
        % ("(ours in mqpcf.parm.id)", known, len(ours), 100 * known / len(ours)))
    assert known / len(ours) > 0.8


# -- values quoted from IBM's documentation --------------------------------------

def test_trace_route_values_from_ibm_docs():
    # IBM MQ reference, "MQROUTE_* (Trace-route)": decimal values.
    assert C.MQROUTE_UNLIMITED_ACTIVITIES == 0
    assert C.MQROUTE_DETAIL_LOW == 2
    assert C.MQROUTE_DETAIL_MEDIUM == 8
    assert C.MQROUTE_DETAIL_HIGH == 32
    assert C.MQROUTE_FORWARD_ALL == 256
    assert C.MQROUTE_FORWARD_IF_SUPPORTED == 512
    assert C.MQROUTE_FORWARD_REJ_UNSUP_MASK == -65536
    assert C.MQROUTE_DELIVER_YES == 4096
    assert C.MQROUTE_DELIVER_NO == 8192
    assert C.MQROUTE_DELIVER_REJ_UNSUP_MASK == -65536
    assert C.MQROUTE_ACCUMULATE_NONE == 65539
    assert C.MQROUTE_ACCUMULATE_IN_MSG == 65540
    assert C.MQROUTE_ACCUMULATE_AND_REPLY == 65541
    # the trace-route reference (seed 004) spells the forwarding mask this way
    assert C.MQROUTE_FORWARDING_REJ_UNSUP_MASK == C.MQROUTE_FORWARD_REJ_UNSUP_MASK


def test_operation_values_from_ibm_docs():
    # IBM MQ reference, "MQOPER_* (Activity Operation)".
    expected = {"MQOPER_UNKNOWN": 0, "MQOPER_BROWSE": 1, "MQOPER_DISCARD": 2, "MQOPER_GET": 3, "MQOPER_PUT": 4,
                "MQOPER_PUT_REPLY": 5, "MQOPER_PUT_REPORT": 6, "MQOPER_RECEIVE": 7, "MQOPER_SEND": 8,
                "MQOPER_TRANSFORM": 9, "MQOPER_PUBLISH": 10, "MQOPER_EXCLUDED_PUBLISH": 11,
                "MQOPER_DISCARDED_PUBLISH": 12, "MQOPER_SYSTEM_LAST": 65535, "MQOPER_APPL_FIRST": 65536,
                "MQOPER_APPL_LAST": 999999999}
    assert {n: C.MQOPER.value_of(n) for n in expected} == expected
    for name, value in expected.items():
        if not C.is_range_marker(name):
            assert C.MQOPER.name_of(value) == name


def test_pcf_values_from_ibm_docs():
    # "MQCMD_* (Command codes)", "MQIACF_* (Command format integer parameter types)",
    # "MQGACF_*", reason code pages ("2085 (0825) (RC2085): MQRC_UNKNOWN_OBJECT_NAME").
    assert (C.MQCMD_CHANGE_Q_MGR, C.MQCMD_INQUIRE_Q, C.MQCMD_INQUIRE_CHANNEL) == (1, 13, 25)
    assert (C.MQIACF_QUIESCE, C.MQIACF_MODE, C.MQIACF_COMMAND, C.MQIACF_OBJECT_TYPE) == (1008, 1008, 1021, 1016)
    assert C.MQCACF_FROM_Q_NAME == 3001 and C.MQCACF_USER_IDENTIFIER == 3025
    assert C.MQRC_UNKNOWN_OBJECT_NAME == 2085 and C.MQRCCF_COMMAND_FAILED == 3008
    assert C.MQGACF_COMMAND_CONTEXT == 8001 and C.MQGACF_ACTIVITY == 8005
    assert (C.MQCFT_GROUP, C.MQCFT_INTEGER64, C.MQCFT_STATISTICS) == (20, 23, 21)
    # header structures: lengths from the MQMD / MQCFH / MQCFIN reference pages
    assert (C.MQMD_STRUC_ID, C.MQMD_LENGTH_1, C.MQMD_LENGTH_2) == ("MD  ", 324, 364)
    assert (C.MQCFH_STRUC_LENGTH, C.MQCFH_CURRENT_VERSION) == (36, 3)
    assert (C.MQCFIN_STRUC_LENGTH, C.MQCFIN64_STRUC_LENGTH, C.MQCFGR_STRUC_LENGTH) == (16, 24, 16)
    assert (C.MQEPH_STRUC_ID, C.MQDLH_STRUC_ID, C.MQXQH_STRUC_ID, C.MQMDE_STRUC_ID) == ("EPH ", "DLH ", "XQH ", "MDE ")
    assert C.MQFMT_ADMIN == "MQADMIN " and C.MQFMT_EMBEDDED_PCF == "MQHEPCF " and C.MQFMT_NONE == " " * 8


def test_vectors_readme_names(vectors):
    # README: statistics_q.dat is "MQCFT_STATISTICS, MQCMD_STATISTICS_Q (165)",
    # pcf_with_cfif.dat "MQCFT_EVENT, MQCMD_COMMAND_EVENT (99)".
    for name, cftype, command in (("statistics_q.dat", "MQCFT_STATISTICS", "MQCMD_STATISTICS_Q"),
                                  ("pcf_with_cfif.dat", "MQCFT_EVENT", "MQCMD_COMMAND_EVENT")):
        head = (vectors / "ibmmq" / name).read_bytes()[:16]
        typ, _length, _version, cmd = struct.unpack("<4i", head)
        assert C.MQCFT.name_of(typ) == cftype
        assert C.MQCMD.name_of(cmd) == command
    assert C.MQCMD_STATISTICS_Q == 165 and C.MQCMD_COMMAND_EVENT == 99


def _walk_pcf(data: bytes):
    """(type, parameter) of every PCF structure after the MQCFH (test helper:
    each structure starts Type, StrucLength, Parameter; a group's StrucLength
    covers only its own header, its members follow)."""
    offset = 36
    out = []
    while offset + 12 <= len(data):
        typ, length, param = struct.unpack_from("<3i", data, offset)
        assert 12 <= length <= len(data) - offset, "bad StrucLength at %d" % offset
        out.append((typ, param))
        offset += length
    assert offset == len(data)
    return out


_KIND = {"MQIA": "int", "MQIACF": "int", "MQIACH": "int", "MQIAMO": "int", "MQIAMO64": "int64",
         "MQCA": "str", "MQCACF": "str", "MQCACH": "str", "MQCAMO": "str", "MQBACF": "bytes", "MQBA": "bytes",
         "MQGACF": "group"}


@pytest.mark.parametrize("name", ["statistics_q.dat", "pcf_with_cfif.dat"])
def test_vector_parameter_ids_all_named(vectors, name):
    params = _walk_pcf((vectors / "ibmmq" / name).read_bytes())
    assert len(params) > 5
    for typ, param in params:
        pname = C.parameter_name(param, typ)
        assert pname is not None, "no name for parameter %d of type %s" % (param, C.MQCFT.name_of(typ))
        kind = _KIND[pname.split("_", 1)[0]]
        tname = C.MQCFT.name_of(typ)
        if tname in ("MQCFT_INTEGER64", "MQCFT_INTEGER64_LIST"):
            assert kind in ("int", "int64"), (pname, tname)
        elif tname in ("MQCFT_INTEGER", "MQCFT_INTEGER_LIST", "MQCFT_INTEGER_FILTER"):
            assert kind == "int", (pname, tname)
        elif tname in ("MQCFT_STRING", "MQCFT_STRING_LIST", "MQCFT_STRING_FILTER"):
            assert kind == "str", (pname, tname)
        elif tname == "MQCFT_GROUP":
            assert kind == "group", (pname, tname)


def test_statistics_vector_known_parameters(vectors):
    params = dict((p, t) for t, p in _walk_pcf((vectors / "ibmmq" / "statistics_q.dat").read_bytes()))
    # Queue statistics (IBM "Queue statistics message data"): QMgrName MQCA_Q_MGR_NAME,
    # StartDate MQCAMO_START_DATE, QName MQCA_Q_NAME, PutCount MQIAMO_PUTS (MQCFIL),
    # PutBytes MQIAMO64_PUT_BYTES (MQCFIL64).
    assert {C.MQCA_Q_MGR_NAME, C.MQCAMO_START_DATE, C.MQCA_Q_NAME, C.MQIAMO_PUTS} <= set(params)
    assert params[C.MQIAMO64_PUT_BYTES] == C.MQCFT_INTEGER64_LIST
    assert C.parameter_name(C.MQIAMO64_PUT_BYTES, C.MQCFT_INTEGER64_LIST) == "MQIAMO64_PUT_BYTES"
    assert C.parameter_name(C.MQIAMO_PUTS, C.MQCFT_INTEGER_LIST) == "MQIAMO_PUTS"


# -- the API -------------------------------------------------------------------------

def test_module_level_names_and_families():
    for prefix, fam in C.FAMILIES.items():
        assert getattr(C, prefix) is fam and fam.prefix == prefix
        for name, value in fam.items():
            assert getattr(C, name) == value, name
    assert C.MQCFT.name_of(3) == "MQCFT_INTEGER"
    assert C.ENCODING_BIG == C.MQENC_NORMAL == 273 and C.ENCODING_LITTLE == C.MQENC_REVERSED == 546
    assert "MQENC_NATIVE" not in C.MQENC  # platform-dependent: left out on purpose
    assert "MQRCCF_COMMAND_FAILED" in C.MQRC and "MQRC_NONE" not in C.MQRCCF


def test_range_markers_excluded_from_lookup():
    assert C.MQIA_FIRST == 1 and C.MQIA.name_of(1) == "MQIA_APPL_TYPE"
    assert C.MQIACF_FIRST == 1001 and C.parameter_name(1001) == "MQIACF_Q_MGR_ATTRS"
    assert C.MQRC_APPL_FIRST == 900 and C.reason_name(900) is None and C.reason_name(999) is None
    assert C.MQOPER.name_of(0) == "MQOPER_UNKNOWN"  # not MQOPER_SYSTEM_FIRST
    assert C.MQMT.name_of(1) == "MQMT_REQUEST"
    assert C.MQFB.name_of(1) is None  # only MQFB_SYSTEM_FIRST has that value
    # real values that merely end like markers
    assert C.MQCFC.name_of(1) == "MQCFC_LAST" and C.MQCFC.name_of(0) == "MQCFC_NOT_LAST"
    assert C.MQCUOWC.name_of(17) == "MQCUOWC_FIRST" and C.MQCUOWC.name_of(272) == "MQCUOWC_LAST"
    # masks are not values
    assert C.MQROUTE.name_of(-65536) is None and C.MQRO.name_of(C.MQRO_ACCEPT_UNSUP_MASK) is None
    for fam in C.FAMILIES.values():
        for value in fam.values():
            assert not C.is_range_marker(fam.name_of(value))


def test_aliases():
    # MQAT: IBM's current names win over the older ones listed first in cmqc.h
    assert C.MQAT.name_of(2) == "MQAT_ZOS"
    assert set(C.MQAT.names_of(2)) == {"MQAT_MVS", "MQAT_OS390", "MQAT_ZOS"}
    assert C.MQAT_MVS == C.MQAT_OS390 == C.MQAT_ZOS == 2 and C.MQAT_DEFAULT == C.MQAT_UNIX == 6
    assert C.MQIACF.name_of(1008) == "MQIACF_QUIESCE" and "MQIACF_MODE" in C.MQIACF.names_of(1008)
    assert C.format_name("MQHRF   ") == "MQFMT_RF_HEADER" and C.MQFMT_RF_HEADER_1 == C.MQFMT_RF_HEADER
    assert C.MQCCSI.name_of(0) == "MQCCSI_UNDEFINED" and C.MQCCSI_Q_MGR == C.MQCCSI_DEFAULT == 0


def test_signed_and_unsigned_readings_agree():
    assert C.MQCC.name_of(-1) == C.MQCC.name_of(0xFFFFFFFF) == "MQCC_UNKNOWN"
    assert C.MQCCSI.name_of(0xFFFFFFFE) == "MQCCSI_INHERIT"
    assert C.value_name(C.MQIACF_REASON_CODE, 2085) == "MQRC_UNKNOWN_OBJECT_NAME"
    assert C.MQCC.name_of(2**32 - 1 + 2**32) is None  # not a 32-bit pattern: no alias


def test_parameter_name_type_aware():
    # 703 is MQIAMO_AVG_Q_TIME in an MQCFIN and MQIAMO64_AVG_Q_TIME in an MQCFIN64
    assert C.parameter_name(703, C.MQCFT_INTEGER) == "MQIAMO_AVG_Q_TIME"
    assert C.parameter_name(703, C.MQCFT_INTEGER_LIST) == "MQIAMO_AVG_Q_TIME"
    assert C.parameter_name(703, C.MQCFT_INTEGER64) == "MQIAMO64_AVG_Q_TIME"
    assert C.parameter_name(703, C.MQCFT_INTEGER64_LIST) == "MQIAMO64_AVG_Q_TIME"
    # 64-bit type, id with no MQIAMO64 name: the 32-bit families still answer
    assert C.parameter_name(C.MQIAMO_PUTS, C.MQCFT_INTEGER64_LIST) == "MQIAMO_PUTS"
    # kind matters: an integer id in a string structure is not named
    assert C.parameter_name(1, C.MQCFT_INTEGER) == "MQIA_APPL_TYPE"
    assert C.parameter_name(1, C.MQCFT_STRING) is None
    assert C.parameter_name(2016, C.MQCFT_STRING) == "MQCA_Q_NAME"
    assert C.parameter_name(2016, C.MQCFT_STRING_FILTER) == "MQCA_Q_NAME"
    assert C.parameter_name(2016, C.MQCFT_INTEGER) is None
    assert C.parameter_name(7001, C.MQCFT_BYTE_STRING) == "MQBACF_EVENT_ACCOUNTING_TOKEN"
    assert C.parameter_name(8001, C.MQCFT_GROUP) == "MQGACF_COMMAND_CONTEXT"
    assert C.parameter_name(8001, C.MQCFT_INTEGER) is None
    # no type, or a type that carries no parameter: every family
    assert C.parameter_name(8001) == "MQGACF_COMMAND_CONTEXT"
    assert C.parameter_name(2016, C.MQCFT_COMMAND) == "MQCA_Q_NAME"
    assert C.parameter_name(0) is None and C.parameter_name(-5) is None


def test_parameter_kinds_do_not_overlap():
    """Ids are unique across kinds (int / string / bytes / group), which is why
    a missing cftype can still be answered unambiguously."""
    seen: dict[int, str] = {}
    for prefix in PARAM:
        kind = _KIND[prefix].replace("int64", "int")
        for name in C.FAMILIES[prefix]:
            if C.is_range_marker(name):
                continue
            value = C.FAMILIES[prefix].value_of(name)
            assert seen.setdefault(value, kind) == kind, name


def test_value_name_examples():
    vn = C.value_name
    assert vn(C.MQIACF_OPERATION_TYPE, 4) == "MQOPER_PUT"
    assert vn("MQIACF_OPERATION_TYPE", 7) == "MQOPER_RECEIVE"
    assert vn(C.MQIACF_ROUTE_DETAIL, 2) == "MQROUTE_DETAIL_LOW"
    assert vn(C.MQIACF_ROUTE_DETAIL, 0x100) is None  # a forwarding value, not a detail level
    assert vn(C.MQIACF_ROUTE_FORWARDING, 0x200) == "MQROUTE_FORWARD_IF_SUPPORTED"
    assert vn(C.MQIACF_ROUTE_FORWARDING, 0x1000) is None
    assert vn(C.MQIACF_ROUTE_FORWARDING, -65536) is None  # a mask
    assert vn(C.MQIACF_ROUTE_DELIVERY, 0x1000) == "MQROUTE_DELIVER_YES"
    assert vn(C.MQIACF_ROUTE_ACCUMULATION, 0x10005) == "MQROUTE_ACCUMULATE_AND_REPLY"
    assert vn(C.MQIACF_MAX_ACTIVITIES, 0) == "MQROUTE_UNLIMITED_ACTIVITIES"
    assert vn(C.MQIACF_MAX_ACTIVITIES, 20) is None
    assert vn(C.MQIACF_FEEDBACK, C.MQFB_MAX_ACTIVITIES) == "MQFB_MAX_ACTIVITIES"
    assert vn(C.MQIACF_REASON_CODE, 3008) == "MQRCCF_COMMAND_FAILED"
    assert vn(C.MQIACF_COMMAND, 13) == "MQCMD_INQUIRE_Q"
    assert vn(C.MQIACF_MSG_TYPE, 8) == "MQMT_DATAGRAM"
    assert vn(C.MQIACF_PERSISTENCE, 1) == "MQPER_PERSISTENT"
    assert vn(C.MQIA_Q_TYPE, 3) == "MQQT_ALIAS"
    assert vn(C.MQIACH_CHANNEL_TYPE, 7) == "MQCHT_SVRCONN"
    assert vn(C.MQIA_APPL_TYPE, 28) == "MQAT_JAVA"
    assert vn(C.MQIACF_OBJECT_TYPE, 1) == "MQOT_Q"
    assert vn(C.MQIACF_COMP_CODE, 2) == "MQCC_FAILED"
    assert vn(C.MQIAMO_MONITOR_DATATYPE, 1024) == "MQIAMO_MONITOR_KB"
    assert vn(C.MQIAMO_MONITOR_FLAGS, 1) == "MQIAMO_MONITOR_FLAGS_OBJNAME"
    # bit fields and plain numbers stay unnamed
    assert vn(C.MQIACF_ENCODING, 273) is None
    assert vn(C.MQIACF_REPORT, 0) is None
    assert vn(C.MQIA_CURRENT_Q_DEPTH, 1) is None
    assert vn(999999, 1) is None and vn("MQCA_Q_NAME", 1) is None and vn("nonsense", 1) is None


def test_reason_and_format_names():
    assert C.reason_name(0) == "MQRC_NONE"
    assert C.reason_name(2085) == "MQRC_UNKNOWN_OBJECT_NAME"
    assert C.reason_name(3008) == "MQRCCF_COMMAND_FAILED"
    assert C.reason_name(6000) == "MQRC_LIBRARY_LOAD_ERROR"
    assert C.reason_name(1) is None
    assert C.format_name("MQADMIN ") == "MQFMT_ADMIN"
    assert C.format_name("MQADMIN") == "MQFMT_ADMIN"
    assert C.format_name(b"MQSTR   ") == "MQFMT_STRING"
    assert C.format_name("MQHRF2  ") == "MQFMT_RF_HEADER_2"
    assert C.format_name(" " * 8) == "MQFMT_NONE"
    assert C.format_name("MQXYZ   ") is None
    assert C.format_name(b"\xd4\xd8\xc1\xc4\xd4\xc9\xd5@") is None  # EBCDIC: the caller decodes first
    assert C.format_name("MQADMIN   X") is None and C.format_name(None) is None and C.format_name(5) is None


def test_flag_names():
    # MQMD.Report of a typical request (IBM "Report (MQLONG)": options are added together)
    report = C.MQRO_EXCEPTION_WITH_FULL_DATA | C.MQRO_COA | C.MQRO_PASS_CORREL_ID
    assert C.MQRO.flag_names(report) == ["MQRO_EXCEPTION_WITH_FULL_DATA", "MQRO_COA", "MQRO_PASS_CORREL_ID"]
    assert C.MQRO.flag_names(0) == [] and C.MQRO.flag_names(None) == []
    assert C.MQRO.flag_names(0x0100 | 0x0800) == ["MQRO_COD", "MQRO_COA"]
    assert C.MQRO.flag_names(0x00000008) == ["0x00000008"]  # no MQRO option has that bit
    assert C.MQMF.flag_names(C.MQMF_MSG_IN_GROUP | C.MQMF_LAST_MSG_IN_GROUP) == ["MQMF_LAST_MSG_IN_GROUP",
                                                                                 "MQMF_MSG_IN_GROUP"]
    assert C.MQENC.flag_names(0x111) == ["MQENC_NORMAL"] and C.MQENC.flag_names(0x222) == ["MQENC_REVERSED"]
    assert C.MQENC.flag_names(0x112) == ["MQENC_FLOAT_IEEE_NORMAL", "MQENC_DECIMAL_NORMAL", "MQENC_INTEGER_REVERSED"]


# -- properties --------------------------------------------------------------------

_names = st.sampled_from(sorted((p, n) for p, f in C.FAMILIES.items() for n in f if not C.is_range_marker(n)))


@settings(max_examples=200, deadline=None)
@given(_names)
def test_name_value_round_trip(item):
    prefix, name = item
    fam = C.FAMILIES[prefix]
    value = fam.value_of(name)
    back = fam.name_of(value)
    assert back is not None and fam.value_of(back) == value
    assert name in fam.names_of(value)


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=-2**31, max_value=2**31 - 1))
def test_lookups_total_on_any_mqlong(value):
    unsigned = value & 0xFFFFFFFF
    for fam in (C.MQRC, C.MQCFT, C.MQCMD, C.MQIACF):
        assert fam.name_of(value) == fam.name_of(unsigned)
    assert C.parameter_name(value) == C.parameter_name(unsigned)
    for cftype in (None, C.MQCFT_INTEGER64, C.MQCFT_STRING, C.MQCFT_GROUP, value):
        C.parameter_name(value, cftype)
    assert C.value_name(C.MQIACF_OPERATION_TYPE, value) == C.value_name(C.MQIACF_OPERATION_TYPE, unsigned)
    C.value_name(value, value)
    C.reason_name(value)


@settings(max_examples=100, deadline=None)
@given(st.one_of(st.none(), st.floats(allow_nan=True), st.text(max_size=12), st.binary(max_size=12),
                 st.integers(min_value=-2**70, max_value=2**70), st.lists(st.integers(), max_size=2)))
def test_lookups_never_raise(odd):
    assert C.MQCC.name_of(odd, "x") in ("x", "MQCC_OK", "MQCC_WARNING", "MQCC_FAILED", "MQCC_UNKNOWN")
    C.parameter_name(odd)
    C.parameter_name(1, odd)
    C.value_name(odd, odd)
    C.reason_name(odd)
    C.format_name(odd)
    C.MQAT.names_of(odd)


