"""The baseline the batch decoders are measured against: a plain ``construct``
declaration of a PCF body (MQCFH + every parameter type, groups nested by
``LazyBound``), parsed interpreted and ``.compile()``d.

This is what a construct user would write for the job; the project's own
codec (``mqcodec.ibmmq.pcf``) adds the error model, CCSIDs and exact
re-encoding on top and is measured separately as the "pure batch" row.
"""
import construct as cs
from construct import this


def declarations(little: bool = True):
    L = cs.Int32sl if little else cs.Int32sb
    Q = cs.Int64sl if little else cs.Int64sb

    def rest(n_fixed):  # bytes between the content and StrucLength
        return cs.Bytes(this._.StrucLength - n_fixed)

    bodies = {
        3: cs.Struct("Parameter" / L, "Value" / L),
        23: cs.Struct("Parameter" / L, "Reserved" / L, "Value" / Q),
        5: cs.Struct("Parameter" / L, "Count" / L, "Values" / cs.Array(this.Count, L)),
        25: cs.Struct("Parameter" / L, "Count" / L, "Values" / cs.Array(this.Count, Q)),
        4: cs.Struct("Parameter" / L, "CodedCharSetId" / L, "StringLength" / L,
                     "String" / cs.Bytes(this.StringLength),
                     "Padding" / cs.Bytes(this._.StrucLength - 20 - this.StringLength)),
        6: cs.Struct("Parameter" / L, "CodedCharSetId" / L, "Count" / L, "StringLength" / L,
                     "Strings" / cs.Array(this.Count, cs.Bytes(this.StringLength)),
                     "Padding" / cs.Bytes(this._.StrucLength - 24 - this.Count * this.StringLength)),
        9: cs.Struct("Parameter" / L, "StringLength" / L, "String" / cs.Bytes(this.StringLength),
                     "Padding" / cs.Bytes(this._.StrucLength - 16 - this.StringLength)),
        13: cs.Struct("Parameter" / L, "Operator" / L, "FilterValue" / L),
        20: cs.Struct("Parameter" / L, "ParameterCount" / L),
    }
    param = cs.Struct(
        "Type" / L,
        "StrucLength" / L,
        "Data" / cs.Switch(this.Type, bodies, default=cs.Bytes(this.StrucLength - 8)),
        "Children" / cs.If(this.Type == 20, cs.Array(this.Data.ParameterCount, cs.LazyBound(lambda: param))),
    )
    cfh = cs.Struct("Type" / L, "StrucLength" / L, "Version" / L, "Command" / L, "MsgSeqNumber" / L,
                    "Control" / L, "CompCode" / L, "Reason" / L, "ParameterCount" / L)
    body = cs.Struct("MQCFH" / cfh, "Parameters" / cs.Array(this.MQCFH.ParameterCount, param))
    return body


def compiled(little: bool = True):
    return declarations(little).compile()
