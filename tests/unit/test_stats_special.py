"""Normal / Student-t functions against known table values and math.erfc."""

from __future__ import annotations

import math

import numpy as np
import pytest

from harness.stats.special import chi2_cdf, chi2_ppf, norm_pdf, norm_ppf, norm_sf, t_ppf, t_sf


def test_norm_sf_matches_math_erfc_in_the_tails() -> None:
    x = np.linspace(-8.0, 8.0, 321)
    exact = np.array([0.5 * math.erfc(v / math.sqrt(2.0)) for v in x])
    assert np.allclose(norm_sf(x), exact, rtol=2e-7, atol=0.0)


def test_norm_ppf_known_quantiles() -> None:
    assert norm_ppf(0.975) == pytest.approx(1.959963985, abs=1e-9)
    assert norm_ppf(0.95) == pytest.approx(1.644853627, abs=1e-9)
    assert norm_ppf(0.5) == pytest.approx(0.0, abs=1e-12)
    assert norm_ppf(0.025) == pytest.approx(-1.959963985, abs=1e-9)


def test_norm_pdf_integrates_to_one() -> None:
    x = np.linspace(-10, 10, 20001)
    assert float(np.sum(norm_pdf(x)) * (x[1] - x[0])) == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize(("p", "df", "expected"), [
    (0.975, 1, 12.7062), (0.975, 2, 4.3027), (0.975, 3, 3.1824), (0.975, 7, 2.3646),
    (0.95, 7, 1.8946), (0.995, 7, 3.4995), (0.999, 2, 22.3271), (0.975, 30, 2.0423),
])
def test_t_ppf_table_values(p: float, df: int, expected: float) -> None:
    assert t_ppf(p, df) == pytest.approx(expected, abs=1e-4)
    assert t_ppf(1.0 - p, df) == pytest.approx(-expected, abs=1e-4)


def test_t_sf_is_a_distribution_tail() -> None:
    for df in (1, 2, 3, 8, 15):
        xs = [-5.0, -1.0, 0.0, 0.5, 2.0, 10.0]
        tails = [t_sf(x, df) for x in xs]
        assert tails == sorted(tails, reverse=True)
        assert t_sf(0.0, df) == pytest.approx(0.5)
        assert t_sf(1.5, df) + t_sf(-1.5, df) == pytest.approx(1.0)


def test_t_approaches_normal_for_large_df() -> None:
    assert t_ppf(0.975, 1000) == pytest.approx(1.96234, abs=1e-4)
    assert t_ppf(0.975, 1000) > norm_ppf(0.975)


def test_bad_probabilities_are_refused() -> None:
    with pytest.raises(ValueError):
        norm_ppf(1.0)
    with pytest.raises(ValueError):
        t_ppf(0.0, 3)
    with pytest.raises(ValueError):
        t_sf(1.0, 0)


@pytest.mark.parametrize(("p", "df", "expected"), [
    (0.05, 1, 0.00393214), (0.05, 2, 0.102587), (0.05, 3, 0.351846), (0.05, 7, 2.16735),
    (0.95, 3, 7.81473), (0.99, 8, 20.0902), (0.5, 10, 9.34182),
])
def test_chi2_ppf_table_values(p: float, df: int, expected: float) -> None:
    assert chi2_ppf(p, df) == pytest.approx(expected, rel=1e-5)
    assert chi2_cdf(expected, df) == pytest.approx(p, abs=1e-6)
