"""seekmodel's analysis: which device's numbers reach the section's prose."""

import pandas as pd

from pagelab.experiments import seekmodel


def test_only_the_seeds_disk_and_stick_write_the_prose_macros():
    """A disk a config adds (hdd7200-2007 beside the seed's hdd5400-2008) is in the tables, but
    its numbers never land in a sentence about the seed's disk: the prose macros are the seed's
    devices' alone, and n/a when one was not measured."""
    curve = pd.DataFrame({
        "disk_profile": ["hdd5400-2008", "hdd5400-2008", "hdd7200-2007", "hdd7200-2007"],
        "span": [16 << 20, 64 << 30, 16 << 20, 64 << 30],
        "t_ms": [7.0, 15.0, 4.0, 9.0], "model_ms": [7.1, 14.9, 4.1, 8.9],
    })
    m = seekmodel.span_macros(curve)
    assert m["SeekmodelHddSpanShortMs"] == "7.00" and m["SeekmodelHddSpanLongMs"] == "15.0", m
    assert len(m) == 6  # hdd5400-2008's short and long span: size, measured, model
    assert seekmodel.device_macros("hdd7200-2007", None, None, None) == {}
    filled = seekmodel.placeholder_macros(m)
    assert filled["SeekmodelHddSpanShortMs"] == "7.00"
    assert filled["SeekmodelUsbstickTAccessMs"] == "n/a"  # the stick was not measured
    assert not any("7200" in k for k in filled)


def test_the_fuse_round_trip_explains_only_an_access_time_above_the_models():
    """The stick's sentence names the FUSE round trip as the excess of the fitted access time over
    the model's only where there is one; a stick not measured has no clause at all."""
    from pagelab.core.fit import FitResult, Param

    def fitted(t_access_s):
        params = {"t_access": Param("t_access", t_access_s, 0.0, t_access_s, t_access_s),
                  "bandwidth": Param("bandwidth", 20e6, 0.0, 20e6, 20e6)}
        return FitResult(lambda x, *p: x, params, 5, 3, 0.0, 0.95)

    summary = pd.DataFrame({"bs": [4096, 65536], "t_ms": [1.02, 4.1], "mbps": [4.0, 16.0]})
    above = seekmodel.device_macros("usbstick-2008", summary, fitted(0.000813), fitted(0.0008))
    below = seekmodel.device_macros("usbstick-2008", summary, fitted(0.000790), fitted(0.0008))
    assert above["SeekmodelUsbstickExcessClause"].startswith(", the excess being the FUSE round trip")
    assert below["SeekmodelUsbstickExcessClause"] == ""
    assert seekmodel.placeholder_macros({})["SeekmodelUsbstickExcessClause"] == ""
