// The library's version (CHANGELOG.md; Semantic Versioning).

/// The version of HarmoniaCore for Linux this code is, as `MAJOR.MINOR.PATCH`.
/// Until 1.0.0, a minor version may change the API (CHANGELOG.md says how).
public enum HarmoniaVersion {
    /// `MAJOR.MINOR.PATCH`.
    public static let string = "0.1.0"
}
