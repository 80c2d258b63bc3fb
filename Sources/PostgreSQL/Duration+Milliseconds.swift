extension Duration {
    /// Whole milliseconds, as PostgreSQL settings and `poll` take them.
    package var wholeMilliseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
