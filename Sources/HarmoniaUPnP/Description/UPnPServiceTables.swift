// The three services' actions and state variables, from which the SCPDs
// are written — specs/upnp.md §Control
//
// AVTransport:1, RenderingControl:1 and ConnectionManager:1 as the UPnP AV
// 1.0 service templates define them (the actions we implement).

/// A state variable of an SCPD.
public struct UPnPStateVariable: Sendable {
    public let name: String
    public let type: String
    public let evented: Bool
    public let allowed: [String]
    /// min, max, step (numeric variables).
    public let range: (Int, Int, Int)?

    init(_ name: String, _ type: String = "string", evented: Bool = false, allowed: [String] = [], range: (Int, Int, Int)? = nil) {
        self.name = name
        self.type = type
        self.evented = evented
        self.allowed = allowed
        self.range = range
    }
}

/// An action of an SCPD: arguments as (name, related state variable).
public struct UPnPActionSpec: Sendable {
    public let name: String
    public let inputs: [(String, String)]
    public let outputs: [(String, String)]

    init(_ name: String, in inputs: [(String, String)] = [], out outputs: [(String, String)] = []) {
        self.name = name
        self.inputs = inputs
        self.outputs = outputs
    }
}

/// One service of the renderer: its names, paths, actions and variables.
public struct UPnPServiceSpec: Sendable {
    /// Short name, used in paths ("AVTransport").
    public let name: String
    public let actions: [UPnPActionSpec]
    public let variables: [UPnPStateVariable]

    public var serviceType: String { "urn:schemas-upnp-org:service:\(name):1" }
    public var serviceID: String { "urn:upnp-org:serviceId:\(name)" }
    public var scpdPath: String { "/upnp/\(name)/scpd.xml" }
    public var controlPath: String { "/upnp/\(name)/control" }
    public var eventPath: String { "/upnp/\(name)/event" }

    /// The action named `name`.
    public func action(_ name: String) -> UPnPActionSpec? { actions.first { $0.name == name } }
}

extension UPnPServiceSpec {
    private static let instance = ("InstanceID", "A_ARG_TYPE_InstanceID")
    private static let channel = ("Channel", "A_ARG_TYPE_Channel")

    public static let avTransport = UPnPServiceSpec(
        name: "AVTransport",
        actions: [
            UPnPActionSpec("SetAVTransportURI", in: [instance, ("CurrentURI", "AVTransportURI"), ("CurrentURIMetaData", "AVTransportURIMetaData")]),
            UPnPActionSpec("SetNextAVTransportURI", in: [instance, ("NextURI", "NextAVTransportURI"), ("NextURIMetaData", "NextAVTransportURIMetaData")]),
            UPnPActionSpec("GetMediaInfo", in: [instance], out: [
                ("NrTracks", "NumberOfTracks"), ("MediaDuration", "CurrentMediaDuration"), ("CurrentURI", "AVTransportURI"),
                ("CurrentURIMetaData", "AVTransportURIMetaData"), ("NextURI", "NextAVTransportURI"),
                ("NextURIMetaData", "NextAVTransportURIMetaData"), ("PlayMedium", "PlaybackStorageMedium"),
                ("RecordMedium", "RecordStorageMedium"), ("WriteStatus", "RecordMediumWriteStatus"),
            ]),
            UPnPActionSpec("GetTransportInfo", in: [instance], out: [
                ("CurrentTransportState", "TransportState"), ("CurrentTransportStatus", "TransportStatus"),
                ("CurrentSpeed", "TransportPlaySpeed"),
            ]),
            UPnPActionSpec("GetPositionInfo", in: [instance], out: [
                ("Track", "CurrentTrack"), ("TrackDuration", "CurrentTrackDuration"), ("TrackMetaData", "CurrentTrackMetaData"),
                ("TrackURI", "CurrentTrackURI"), ("RelTime", "RelativeTimePosition"), ("AbsTime", "AbsoluteTimePosition"),
                ("RelCount", "RelativeCounterPosition"), ("AbsCount", "AbsoluteCounterPosition"),
            ]),
            UPnPActionSpec("GetDeviceCapabilities", in: [instance], out: [
                ("PlayMedia", "PossiblePlaybackStorageMedia"), ("RecMedia", "PossibleRecordStorageMedia"),
                ("RecQualityModes", "PossibleRecordQualityModes"),
            ]),
            UPnPActionSpec("GetTransportSettings", in: [instance], out: [
                ("PlayMode", "CurrentPlayMode"), ("RecQualityMode", "CurrentRecordQualityMode"),
            ]),
            UPnPActionSpec("Stop", in: [instance]),
            UPnPActionSpec("Play", in: [instance, ("Speed", "TransportPlaySpeed")]),
            UPnPActionSpec("Pause", in: [instance]),
            UPnPActionSpec("Seek", in: [instance, ("Unit", "A_ARG_TYPE_SeekMode"), ("Target", "A_ARG_TYPE_SeekTarget")]),
            UPnPActionSpec("Next", in: [instance]),
            UPnPActionSpec("Previous", in: [instance]),
            UPnPActionSpec("SetPlayMode", in: [instance, ("NewPlayMode", "CurrentPlayMode")]),
            UPnPActionSpec("GetCurrentTransportActions", in: [instance], out: [("Actions", "CurrentTransportActions")]),
        ],
        variables: [
            UPnPStateVariable("TransportState", allowed: ["STOPPED", "PLAYING", "TRANSITIONING", "PAUSED_PLAYBACK", "NO_MEDIA_PRESENT"]),
            UPnPStateVariable("TransportStatus", allowed: ["OK", "ERROR_OCCURRED"]),
            UPnPStateVariable("PlaybackStorageMedium", allowed: ["NONE", "NETWORK"]),
            UPnPStateVariable("RecordStorageMedium", allowed: ["NOT_IMPLEMENTED"]),
            UPnPStateVariable("PossiblePlaybackStorageMedia"),
            UPnPStateVariable("PossibleRecordStorageMedia"),
            UPnPStateVariable("CurrentPlayMode", allowed: ["NORMAL", "REPEAT_ONE", "REPEAT_ALL", "SHUFFLE"]),
            UPnPStateVariable("TransportPlaySpeed", allowed: ["1"]),
            UPnPStateVariable("RecordMediumWriteStatus", allowed: ["NOT_IMPLEMENTED"]),
            UPnPStateVariable("CurrentRecordQualityMode", allowed: ["NOT_IMPLEMENTED"]),
            UPnPStateVariable("PossibleRecordQualityModes"),
            UPnPStateVariable("NumberOfTracks", "ui4"),
            UPnPStateVariable("CurrentTrack", "ui4"),
            UPnPStateVariable("CurrentTrackDuration"),
            UPnPStateVariable("CurrentMediaDuration"),
            UPnPStateVariable("CurrentTrackMetaData"),
            UPnPStateVariable("CurrentTrackURI"),
            UPnPStateVariable("AVTransportURI"),
            UPnPStateVariable("AVTransportURIMetaData"),
            UPnPStateVariable("NextAVTransportURI"),
            UPnPStateVariable("NextAVTransportURIMetaData"),
            UPnPStateVariable("RelativeTimePosition"),
            UPnPStateVariable("AbsoluteTimePosition"),
            UPnPStateVariable("RelativeCounterPosition", "i4"),
            UPnPStateVariable("AbsoluteCounterPosition", "i4"),
            UPnPStateVariable("CurrentTransportActions"),
            UPnPStateVariable("LastChange", evented: true),
            UPnPStateVariable("A_ARG_TYPE_SeekMode", allowed: ["TRACK_NR", "REL_TIME", "ABS_TIME"]),
            UPnPStateVariable("A_ARG_TYPE_SeekTarget"),
            UPnPStateVariable("A_ARG_TYPE_InstanceID", "ui4"),
        ]
    )

    public static let renderingControl = UPnPServiceSpec(
        name: "RenderingControl",
        actions: [
            UPnPActionSpec("ListPresets", in: [instance], out: [("CurrentPresetNameList", "PresetNameList")]),
            UPnPActionSpec("SelectPreset", in: [instance, ("PresetName", "A_ARG_TYPE_PresetName")]),
            UPnPActionSpec("GetMute", in: [instance, channel], out: [("CurrentMute", "Mute")]),
            UPnPActionSpec("SetMute", in: [instance, channel, ("DesiredMute", "Mute")]),
            UPnPActionSpec("GetVolume", in: [instance, channel], out: [("CurrentVolume", "Volume")]),
            UPnPActionSpec("SetVolume", in: [instance, channel, ("DesiredVolume", "Volume")]),
        ],
        variables: [
            UPnPStateVariable("PresetNameList"),
            UPnPStateVariable("LastChange", evented: true),
            UPnPStateVariable("Mute", "boolean"),
            UPnPStateVariable("Volume", "ui2", range: (0, 100, 1)),
            UPnPStateVariable("A_ARG_TYPE_Channel", allowed: ["Master"]),
            UPnPStateVariable("A_ARG_TYPE_InstanceID", "ui4"),
            UPnPStateVariable("A_ARG_TYPE_PresetName", allowed: ["FactoryDefaults"]),
        ]
    )

    public static let connectionManager = UPnPServiceSpec(
        name: "ConnectionManager",
        actions: [
            UPnPActionSpec("GetProtocolInfo", out: [("Source", "SourceProtocolInfo"), ("Sink", "SinkProtocolInfo")]),
            UPnPActionSpec("GetCurrentConnectionIDs", out: [("ConnectionIDs", "CurrentConnectionIDs")]),
            UPnPActionSpec("GetCurrentConnectionInfo", in: [("ConnectionID", "A_ARG_TYPE_ConnectionID")], out: [
                ("RcsID", "A_ARG_TYPE_RcsID"), ("AVTransportID", "A_ARG_TYPE_AVTransportID"),
                ("ProtocolInfo", "A_ARG_TYPE_ProtocolInfo"), ("PeerConnectionManager", "A_ARG_TYPE_ConnectionManager"),
                ("PeerConnectionID", "A_ARG_TYPE_ConnectionID"), ("Direction", "A_ARG_TYPE_Direction"),
                ("Status", "A_ARG_TYPE_ConnectionStatus"),
            ]),
        ],
        variables: [
            UPnPStateVariable("SourceProtocolInfo", evented: true),
            UPnPStateVariable("SinkProtocolInfo", evented: true),
            UPnPStateVariable("CurrentConnectionIDs", evented: true),
            UPnPStateVariable("A_ARG_TYPE_ConnectionStatus", allowed: ["OK", "ContentFormatMismatch", "InsufficientBandwidth", "UnreliableChannel", "Unknown"]),
            UPnPStateVariable("A_ARG_TYPE_ConnectionManager"),
            UPnPStateVariable("A_ARG_TYPE_Direction", allowed: ["Input", "Output"]),
            UPnPStateVariable("A_ARG_TYPE_ProtocolInfo"),
            UPnPStateVariable("A_ARG_TYPE_ConnectionID", "i4"),
            UPnPStateVariable("A_ARG_TYPE_AVTransportID", "i4"),
            UPnPStateVariable("A_ARG_TYPE_RcsID", "i4"),
        ]
    )

    public static let all = [avTransport, renderingControl, connectionManager]
}
