// CDBus: libdbus-1 (the reference D-Bus library) for Swift.
//
// Apt provider: libdbus-1-dev. pkg-config: dbus-1.
//
// Nothing here but the include: every call HarmoniaMPRIS makes is an ordinary
// C function, and the type codes it needs (DBUS_TYPE_STRING is the cast
// expression ((int) 's'), which the importer drops) are spelt in Swift from
// their ASCII letters (Sources/HarmoniaMPRIS/DBusValue.swift).
#ifndef HARMONIA_CDBUS_SHIM_H
#define HARMONIA_CDBUS_SHIM_H

#include <dbus/dbus.h>

#endif
