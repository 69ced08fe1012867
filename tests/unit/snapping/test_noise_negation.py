"""Regression: Y for S = −1 must be the exact negation of Y for S = +1, at p bits (DESIGN §2.4).

Found by the exact verifier (issue 4): ``-y`` on an mpfr rounds to the *global* gmpy2 context
precision (53 bits by default), so Y for S = −1 lost 65 of its 118 bits and the exact privacy loss
exceeded ε (by 7.8e-16 at ε = 1, bounds ±1000, inputs −1000 and −999, output −488).
"""

import gmpy2
import pytest

from snapdp.parameters import compute_parameters
from snapdp.snapping import noise


@pytest.mark.parametrize("u", [0.3, 2.0**-600, 5e-324, 1 - 2.0**-53, 0.7182818284590452])
@pytest.mark.parametrize("global_precision", [53, 24, 300])
def test_negative_sign_is_exact_negation(u: float, global_precision: int) -> None:
    params = compute_parameters(1.0, 1.0, -1000.0, 1000.0)
    with gmpy2.context(gmpy2.get_context(), precision=global_precision):
        plus = noise(params, 1, u)
        minus = noise(params, -1, u)
    n_plus, d_plus = plus.as_integer_ratio()
    assert minus.as_integer_ratio() == (-n_plus, d_plus)
    assert minus.precision == plus.precision == params.precision
