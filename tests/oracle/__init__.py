"""The independent oracles that tests/test_oracle.py and benchmarks/oracle.py compare our model with."""
