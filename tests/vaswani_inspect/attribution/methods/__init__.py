"""Tests of the attribution methods of `vaswani_inspect/attribution/methods/`, a file per module there."""
