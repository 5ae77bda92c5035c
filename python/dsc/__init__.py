"""dsc's Python side: export PyTorch models to the dsc dialect, build token
data, and compute the golden numbers every dsc result is checked against.

Run with Debian's /usr/bin/python3 (torch 1.13) and PYTHONPATH=python.
"""
