"""Covers collectors/hcamodels.py.

An HCA's model by its name: the name of the model sysfs' hca_type prints, and the hca_type a query names."""

from __future__ import annotations

from collectors.hcamodels import hca_types, model_name, model_words


def test_it_names_the_model_mlx5_and_mlx4_print():
    assert model_name("MT4123") == "ConnectX-6"  # 0x101b
    assert model_name("MT4125") == "ConnectX-6 Dx"
    assert model_name("MT4129") == "ConnectX-7"
    assert model_name("MT4099") == "ConnectX-3"  # mlx4
    assert model_name("MT41686") == "BlueField-2"


def test_it_names_no_model_it_does_not_know():
    for hca_type in (None, "", "MT1", "QLE7342", "MT4123 ", "MT999999"):
        assert model_name(hca_type) is None, hca_type


def test_it_reads_the_hca_type_a_query_names_by_model_or_name_in_any_case():
    assert hca_types("MT4123") == hca_types("mt4123") == hca_types("ConnectX-6") == ["MT4123"]
    assert hca_types("connectx-6  DX") == ["MT4125"]
    assert hca_types("MT04123") == ["MT4123"]
    for words in ("ConnectX", "cn001", "ConnectX-6 Dx extra", "MT"):
        assert hca_types(words) == [], words


def test_it_writes_a_model_by_its_name_and_what_the_driver_printed():
    assert model_words("MT4123") == "ConnectX-6 (MT4123)"
    assert model_words("QLE7342") == "QLE7342"
    assert model_words(None) is None
