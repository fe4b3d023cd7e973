// The SQLite adapter of LibraryStorePort — specs/library.md §Store
import CSQLite
import HarmoniaLibrary
