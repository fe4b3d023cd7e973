import Testing
@testable import HarmoniaLibrary
