import Testing
@testable import HarmoniaMPD
