// `import HarmoniaLinux` is enough for an application: the core's models,
// ports and services come with the factory.
@_exported import HarmoniaCore
