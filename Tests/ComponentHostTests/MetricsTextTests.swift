import Testing

@testable import ComponentHost

@Suite struct MetricsTextTests {
    @Test func aFamilyHasItsHelpAndTypeThenItsSamples() {
        var text = MetricsText()
        text.family("apush_things_total", .counter, help: "Things.")
        text.sample("apush_things_total", labels: [("kind", "a"), ("outcome", "b")], Int64(3))
        text.sample("apush_things_total", 1.5)
        #expect(
            text.text == """
                # HELP apush_things_total Things.
                # TYPE apush_things_total counter
                apush_things_total{kind="a",outcome="b"} 3
                apush_things_total 1.5

                """)
    }

    @Test func labelValuesEscapeBackslashQuoteAndLineFeed() {
        var text = MetricsText()
        text.sample("m", labels: [("domain", "a\\b\"c\nd")], Int64(1))
        #expect(text.text == "m{domain=\"a\\\\b\\\"c\\nd\"} 1\n")
    }

    @Test func helpEscapesBackslashAndLineFeedButNotQuotes() {
        var text = MetricsText()
        text.family("m", .gauge, help: "a \"b\"\\\nc")
        #expect(text.text.hasPrefix("# HELP m a \"b\"\\\\\\nc\n"))
    }

    @Test func aHistogramHasCumulativeBucketsEndingInInfinityThenSumAndCount() {
        var text = MetricsText()
        text.histogram("h_seconds", help: "H.", buckets: [(0.5, 1), (1, 3), (.infinity, 4)], sum: 2.25)
        #expect(
            text.text == """
                # HELP h_seconds H.
                # TYPE h_seconds histogram
                h_seconds_bucket{le="0.5"} 1
                h_seconds_bucket{le="1.0"} 3
                h_seconds_bucket{le="+Inf"} 4
                h_seconds_sum 2.25
                h_seconds_count 4

                """)
    }

    @Test(arguments: [(Double.infinity, "+Inf"), (-.infinity, "-Inf"), (.nan, "NaN"), (0.005, "0.005"), (30, "30.0")])
    func valuesAreWrittenAsPrometheusReadsThem(_ value: Double, _ text: String) {
        #expect(MetricsText.formatted(value) == text)
    }
}
