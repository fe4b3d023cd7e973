// Names, constant properties and introspection data of the MPRIS object
// — specs/mpris.md §Names (Root properties)

/// The fixed names of MPRIS 2 and the D-Bus interfaces it rides on.
enum MPRISNames {
    static let objectPath = "/org/mpris/MediaPlayer2"
    static let busNamePrefix = "org.mpris.MediaPlayer2."
    static let root = "org.mpris.MediaPlayer2"
    static let player = "org.mpris.MediaPlayer2.Player"
    static let properties = "org.freedesktop.DBus.Properties"
    static let introspectable = "org.freedesktop.DBus.Introspectable"
    static let peer = "org.freedesktop.DBus.Peer"
    static let local = "org.freedesktop.DBus.Local"

    enum Error {
        static let failed = "org.freedesktop.DBus.Error.Failed"
        static let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"
        static let notSupported = "org.freedesktop.DBus.Error.NotSupported"
        static let unknownMethod = "org.freedesktop.DBus.Error.UnknownMethod"
        static let unknownInterface = "org.freedesktop.DBus.Error.UnknownInterface"
        static let unknownProperty = "org.freedesktop.DBus.Error.UnknownProperty"
        static let unknownObject = "org.freedesktop.DBus.Error.UnknownObject"
        static let propertyReadOnly = "org.freedesktop.DBus.Error.PropertyReadOnly"
    }
}

/// The `org.mpris.MediaPlayer2` interface's properties: constant for a run.
enum MPRISRoot {
    static let uriSchemes = ["file", "http", "https"]
    /// What the FFmpeg decoder plays, as MIME types.
    static let mimeTypes = [
        "audio/flac", "audio/x-flac", "audio/mpeg", "audio/mp3", "audio/ogg", "audio/vorbis", "audio/opus",
        "audio/wav", "audio/x-wav", "audio/aiff", "audio/x-aiff", "audio/mp4", "audio/x-m4a", "audio/aac",
        "audio/x-wavpack", "audio/x-mpegurl", "audio/x-scpls",
    ]

    static func properties(identity: String) -> [DBusDictEntry] {
        [
            DBusDictEntry(key: "CanQuit", value: .boolean(true)),
            DBusDictEntry(key: "CanRaise", value: .boolean(false)),
            DBusDictEntry(key: "HasTrackList", value: .boolean(false)),
            DBusDictEntry(key: "Identity", value: .string(identity)),
            DBusDictEntry(key: "SupportedUriSchemes", value: .strings(uriSchemes)),
            DBusDictEntry(key: "SupportedMimeTypes", value: .strings(mimeTypes)),
        ]
    }
}

/// org.freedesktop.DBus.Introspectable's answer for our object.
enum MPRISIntrospection {
    static let xml = """
        <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
        <node>
          <interface name="org.freedesktop.DBus.Introspectable">
            <method name="Introspect"><arg name="xml_data" type="s" direction="out"/></method>
          </interface>
          <interface name="org.freedesktop.DBus.Peer">
            <method name="Ping"/>
            <method name="GetMachineId"><arg name="machine_uuid" type="s" direction="out"/></method>
          </interface>
          <interface name="org.freedesktop.DBus.Properties">
            <method name="Get">
              <arg name="interface_name" type="s" direction="in"/>
              <arg name="property_name" type="s" direction="in"/>
              <arg name="value" type="v" direction="out"/>
            </method>
            <method name="GetAll">
              <arg name="interface_name" type="s" direction="in"/>
              <arg name="properties" type="a{sv}" direction="out"/>
            </method>
            <method name="Set">
              <arg name="interface_name" type="s" direction="in"/>
              <arg name="property_name" type="s" direction="in"/>
              <arg name="value" type="v" direction="in"/>
            </method>
            <signal name="PropertiesChanged">
              <arg name="interface_name" type="s"/>
              <arg name="changed_properties" type="a{sv}"/>
              <arg name="invalidated_properties" type="as"/>
            </signal>
          </interface>
          <interface name="org.mpris.MediaPlayer2">
            <method name="Raise"/>
            <method name="Quit"/>
            <property name="CanQuit" type="b" access="read"/>
            <property name="CanRaise" type="b" access="read"/>
            <property name="HasTrackList" type="b" access="read"/>
            <property name="Identity" type="s" access="read"/>
            <property name="SupportedUriSchemes" type="as" access="read"/>
            <property name="SupportedMimeTypes" type="as" access="read"/>
          </interface>
          <interface name="org.mpris.MediaPlayer2.Player">
            <method name="Next"/>
            <method name="Previous"/>
            <method name="Pause"/>
            <method name="PlayPause"/>
            <method name="Stop"/>
            <method name="Play"/>
            <method name="Seek"><arg name="Offset" type="x" direction="in"/></method>
            <method name="SetPosition">
              <arg name="TrackId" type="o" direction="in"/>
              <arg name="Position" type="x" direction="in"/>
            </method>
            <method name="OpenUri"><arg name="Uri" type="s" direction="in"/></method>
            <signal name="Seeked"><arg name="Position" type="x"/></signal>
            <property name="PlaybackStatus" type="s" access="read"/>
            <property name="LoopStatus" type="s" access="readwrite"/>
            <property name="Rate" type="d" access="readwrite"/>
            <property name="Shuffle" type="b" access="readwrite"/>
            <property name="Metadata" type="a{sv}" access="read"/>
            <property name="Volume" type="d" access="readwrite"/>
            <property name="Position" type="x" access="read"/>
            <property name="MinimumRate" type="d" access="read"/>
            <property name="MaximumRate" type="d" access="read"/>
            <property name="CanGoNext" type="b" access="read"/>
            <property name="CanGoPrevious" type="b" access="read"/>
            <property name="CanPlay" type="b" access="read"/>
            <property name="CanPause" type="b" access="read"/>
            <property name="CanSeek" type="b" access="read"/>
            <property name="CanControl" type="b" access="read"/>
          </interface>
        </node>
        """
}
