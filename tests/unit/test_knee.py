from bench.analysis.knee import RatePoint, knee


def point(asked, p99, ok=True):
    return RatePoint(asked, asked if ok else asked * 0.5, p99, ok)


def test_the_knee_is_the_last_rate_under_the_bound():
    points = [point(1000, 2.0), point(3000, 4.0), point(2000, 3.0), point(4000, 30.0)]
    assert knee(points, 20.0).asked == 3000


def test_a_point_past_a_violation_does_not_count():
    assert knee([point(1000, 2.0), point(2000, 25.0), point(3000, 5.0)], 20.0).asked == 1000


def test_an_unreached_rate_ends_the_curve():
    assert knee([point(1000, 2.0), point(2000, 3.0, ok=False), point(3000, 4.0)], 20.0).asked == 1000


def test_no_knee_when_even_the_lowest_rate_is_over_the_bound():
    assert knee([point(1000, 21.0)], 20.0) is None
    assert knee([], 20.0) is None
