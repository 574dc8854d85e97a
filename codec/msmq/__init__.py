"""Microsoft Message Queuing (MSMQ) binary protocol, MS-MQQB / MS-MQMQ.

Shared file: each module's owner adds its own import lines below.
"""
