// The device description and the services' SCPDs — specs/upnp.md §HTTP
import HarmoniaCore

public enum UPnPDescription {
    public static let deviceType = "urn:schemas-upnp-org:device:MediaRenderer:1"
    /// Where the description is served (also found by SSDP's LOCATION).
    public static let path = "/description.xml"

    /// The root device description (UDA 1.1 with the DLNA DMR-1.50 tag).
    public static func device(friendlyName: String, uuid: String, services: [UPnPServiceSpec] = UPnPServiceSpec.all) -> String {
        var xml = """
            <?xml version="1.0" encoding="utf-8"?>
            <root xmlns="urn:schemas-upnp-org:device-1-0" xmlns:dlna="urn:schemas-dlna-org:device-1-0">
            <specVersion><major>1</major><minor>1</minor></specVersion>
            <device>
            <deviceType>\(deviceType)</deviceType>
            <friendlyName>\(UPnPXML.escape(friendlyName))</friendlyName>
            <manufacturer>HarmoniaCore for Linux</manufacturer>
            <manufacturerURL>https://github.com/OneOfWolvesBilly/HarmoniaCore</manufacturerURL>
            <modelDescription>harmonia-play: a gapless audio player</modelDescription>
            <modelName>harmonia-play</modelName>
            <modelNumber>\(UPnPXML.escape(HarmoniaVersion.string))</modelNumber>
            <UDN>uuid:\(uuid)</UDN>
            <dlna:X_DLNADOC>DMR-1.50</dlna:X_DLNADOC>
            <serviceList>

            """
        for service in services {
            xml += "<service><serviceType>\(service.serviceType)</serviceType><serviceId>\(service.serviceID)</serviceId>"
                + "<SCPDURL>\(service.scpdPath)</SCPDURL><controlURL>\(service.controlPath)</controlURL>"
                + "<eventSubURL>\(service.eventPath)</eventSubURL></service>\n"
        }
        xml += "</serviceList>\n</device>\n</root>\n"
        return xml
    }

    /// A service's SCPD: its actions and state variables.
    public static func scpd(_ service: UPnPServiceSpec) -> String {
        var xml = "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<scpd xmlns=\"urn:schemas-upnp-org:service-1-0\">\n"
            + "<specVersion><major>1</major><minor>0</minor></specVersion>\n<actionList>\n"
        for action in service.actions {
            xml += "<action><name>\(action.name)</name><argumentList>"
            for (name, variable) in action.inputs {
                xml += "<argument><name>\(name)</name><direction>in</direction><relatedStateVariable>\(variable)</relatedStateVariable></argument>"
            }
            for (name, variable) in action.outputs {
                xml += "<argument><name>\(name)</name><direction>out</direction><relatedStateVariable>\(variable)</relatedStateVariable></argument>"
            }
            xml += "</argumentList></action>\n"
        }
        xml += "</actionList>\n<serviceStateTable>\n"
        for variable in service.variables {
            xml += "<stateVariable sendEvents=\"\(variable.evented ? "yes" : "no")\"><name>\(variable.name)</name><dataType>\(variable.type)</dataType>"
            if !variable.allowed.isEmpty {
                xml += "<allowedValueList>" + variable.allowed.map { "<allowedValue>\($0)</allowedValue>" }.joined() + "</allowedValueList>"
            }
            if let range = variable.range {
                xml += "<allowedValueRange><minimum>\(range.0)</minimum><maximum>\(range.1)</maximum><step>\(range.2)</step></allowedValueRange>"
            }
            xml += "</stateVariable>\n"
        }
        xml += "</serviceStateTable>\n</scpd>\n"
        return xml
    }
}
