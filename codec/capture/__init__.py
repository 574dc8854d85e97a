"""Captured traffic: pcap/pcapng reading, link layers, IP, TCP reassembly."""
