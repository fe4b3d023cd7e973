// SOAP control: the request envelope in, the response or fault out
// — specs/upnp.md §Control
import HarmoniaCore

/// A UPnP error as a SOAP fault carries it (UPnP Device Architecture 1.1
/// §3.2.2; AVTransport's 7xx). `description` is one line.
public struct UPnPError: Error, Sendable, Equatable, CustomStringConvertible {
    public let code: Int
    public let description: String

    public init(_ code: Int, _ description: String) {
        self.code = code
        self.description = description
    }

    public static func invalidAction(_ why: String = "Invalid Action") -> UPnPError { UPnPError(401, why) }
    public static func invalidArgs(_ why: String = "Invalid Args") -> UPnPError { UPnPError(402, why) }
    public static func actionFailed(_ why: String) -> UPnPError { UPnPError(501, why) }
    public static let transitionNotAvailable = UPnPError(701, "Transition not available")
    public static func illegalMIME(_ why: String) -> UPnPError { UPnPError(714, why) }
    public static func resourceNotFound(_ why: String) -> UPnPError { UPnPError(716, why) }
    public static let invalidInstanceID = UPnPError(718, "Invalid InstanceID")
    public static let illegalSeekTarget = UPnPError(711, "Illegal seek target")
    public static let seekModeNotSupported = UPnPError(710, "Seek mode not supported")
    public static let playModeNotSupported = UPnPError(712, "Play mode not supported")
    public static let invalidConnectionReference = UPnPError(706, "Invalid connection reference")
    /// An engine error kept in one line (501 Action Failed).
    public static func from(_ error: CoreError) -> UPnPError { UPnPError(501, "\(error)") }
}

/// One control request: the action, its service type and its arguments by name.
public struct SOAPRequest: Sendable, Equatable {
    public let serviceType: String
    public let action: String
    public let arguments: [String: String]
}

public enum UPnPSOAP {
    static let envelopeNamespace = "http://schemas.xmlsoap.org/soap/envelope/"

    /// Reads a control request: a SOAP envelope whose Body's first element
    /// is the action, in the namespace `serviceType`, named as the
    /// `SOAPACTION` header names it (`"TYPE#Action"`, quotes optional).
    /// - Throws: `UPnPError` 401 (no action, another service's, or one the
    ///   header names differently: an error, not a guess), 402 for XML that
    ///   is refused (a DOCTYPE, an entity, malformed).
    public static func parse(body: [UInt8], soapAction: String?, serviceType: String) throws(UPnPError) -> SOAPRequest {
        let root: XMLElement
        do {
            root = try UPnPXML.parse(body)
        } catch {
            throw .invalidArgs("SOAP: \(error.description)")
        }
        guard root.name == "Envelope", root.namespace == envelopeNamespace, let soapBody = root.child("Body"),
              let action = soapBody.children.first else {
            throw .invalidAction("SOAP: not an envelope with a body and an action")
        }
        guard action.namespace == serviceType else {
            throw .invalidAction("SOAP: the action's namespace is not \(serviceType)")
        }
        guard var header = soapAction?.trimmingSpaces() else { throw .invalidAction("SOAP: no SOAPACTION header") }
        if header.hasPrefix("\""), header.hasSuffix("\""), header.count >= 2 { header = String(header.dropFirst().dropLast()) }
        guard header == serviceType + "#" + action.name else {
            throw .invalidAction("SOAP: SOAPACTION names \(header.prefix(120)), the body \(action.name.prefix(60))")
        }
        var arguments: [String: String] = [:]
        for argument in action.children {
            guard arguments[argument.name] == nil else { throw .invalidArgs("SOAP: argument \(argument.name) given twice") }
            arguments[argument.name] = argument.text
        }
        return SOAPRequest(serviceType: serviceType, action: action.name, arguments: arguments)
    }

    /// The response envelope of `action` with its out arguments in order.
    public static func response(serviceType: String, action: String, arguments: [(String, String)]) -> String {
        var body = "<u:\(action)Response xmlns:u=\"\(serviceType)\">"
        for (name, value) in arguments { body += "<\(name)>\(UPnPXML.escape(value))</\(name)>" }
        body += "</u:\(action)Response>"
        return envelope(body)
    }

    /// The fault envelope for `error` (sent with HTTP 500).
    public static func fault(_ error: UPnPError) -> String {
        envelope("<s:Fault><faultcode>s:Client</faultcode><faultstring>UPnPError</faultstring><detail>"
            + "<UPnPError xmlns=\"urn:schemas-upnp-org:control-1-0\"><errorCode>\(error.code)</errorCode>"
            + "<errorDescription>\(UPnPXML.escape(error.description))</errorDescription></UPnPError></detail></s:Fault>")
    }

    private static func envelope(_ body: String) -> String {
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<s:Envelope xmlns:s=\"\(envelopeNamespace)\" "
            + "s:encodingStyle=\"http://schemas.xmlsoap.org/soap/encoding/\"><s:Body>\(body)</s:Body></s:Envelope>\n"
    }
}

extension String {
    func trimmingSpaces() -> String {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" { s = s.dropFirst() }
        while let l = s.last, l == " " || l == "\t" { s = s.dropLast() }
        return String(s)
    }
}
