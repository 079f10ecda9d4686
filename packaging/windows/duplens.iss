; Inno Setup script for Duplens: Duplens-<version>-Setup.exe from the PyInstaller onedir build.
;
;   iscc /DAppVersion=0.1.0 packaging\windows\duplens.iss
;
; Input: packaging\dist\duplens\ (Duplens.exe, duplens-cli.exe, _internal\) made by
; packaging\duplens.spec. Output: packaging\dist\Duplens-<version>-Setup.exe.
;
; Per user and without admin rights by default (PrivilegesRequired=lowest: installs under
; %LOCALAPPDATA%\Programs\Duplens and registers the .duplens type under HKCU); the setup
; offers an all-users install to an administrator. The uninstaller removes only what it
; installed: projects (*.duplens, wherever the user saved them) and the user's data folder
; (%LOCALAPPDATA%\Duplens: sample project, settings, logs) are kept.

#ifndef AppVersion
  #error Pass the version: iscc /DAppVersion=X.Y.Z duplens.iss (pyproject.toml's version)
#endif

#define AppName "Duplens"
#define AppExe "Duplens.exe"
#define ProgId "Duplens.Project"

[Setup]
; AppId identifies the installation for upgrades and the uninstaller: never change it.
AppId={{6E2B9C41-5D0A-4F7E-9B3C-2A8D1F4E7C55}
AppName={#AppName}
AppVersion={#AppVersion}
AppVerName={#AppName} {#AppVersion}
AppPublisher=Duplens contributors
VersionInfoVersion={#AppVersion}
DefaultDirName={autopf}\{#AppName}
DefaultGroupName={#AppName}
DisableProgramGroupPage=yes
PrivilegesRequired=lowest
PrivilegesRequiredOverridesAllowed=dialog
ArchitecturesAllowed=x64compatible
ArchitecturesInstallIn64BitMode=x64compatible
ChangesAssociations=yes
SourceDir=..
OutputDir=dist
OutputBaseFilename=Duplens-{#AppVersion}-Setup
SetupIconFile=..\resources\icons\duplens.ico
UninstallDisplayIcon={app}\{#AppExe}
UninstallDisplayName={#AppName} {#AppVersion}
; The bundle is mostly torch and Qt libraries: LZMA2 with solid compression halves it.
Compression=lzma2
SolidCompression=yes
WizardStyle=modern
CloseApplications=yes

[Tasks]
Name: "desktopicon"; Description: "{cm:CreateDesktopIcon}"; GroupDescription: "{cm:AdditionalIcons}"; Flags: unchecked

[Files]
Source: "dist\duplens\*"; DestDir: "{app}"; Flags: ignoreversion recursesubdirs createallsubdirs

[InstallDelete]
; An upgrade replaces the bundled libraries whole, so no file of an older version lingers.
Type: filesandordirs; Name: "{app}\_internal"

[Icons]
Name: "{autoprograms}\{#AppName}"; Filename: "{app}\{#AppExe}"
Name: "{autodesktop}\{#AppName}"; Filename: "{app}\{#AppExe}"; Tasks: desktopicon

[Registry]
; .duplens -> Duplens.Project, opened with "Duplens.exe gui <file>". HKA is HKCU for a
; per-user install and HKLM for an all-users one.
Root: HKA; Subkey: "Software\Classes\.duplens"; ValueType: string; ValueName: ""; ValueData: "{#ProgId}"; Flags: uninsdeletevalue
Root: HKA; Subkey: "Software\Classes\.duplens\OpenWithProgids"; ValueType: string; ValueName: "{#ProgId}"; ValueData: ""; Flags: uninsdeletevalue
Root: HKA; Subkey: "Software\Classes\{#ProgId}"; ValueType: string; ValueName: ""; ValueData: "Duplens project"; Flags: uninsdeletekey
Root: HKA; Subkey: "Software\Classes\{#ProgId}\DefaultIcon"; ValueType: string; ValueName: ""; ValueData: "{app}\{#AppExe},0"
Root: HKA; Subkey: "Software\Classes\{#ProgId}\shell\open\command"; ValueType: string; ValueName: ""; ValueData: """{app}\{#AppExe}"" gui ""%1"""
Root: HKA; Subkey: "Software\Classes\Applications\{#AppExe}\SupportedTypes"; ValueType: string; ValueName: ".duplens"; ValueData: ""; Flags: uninsdeletekey

[Run]
Filename: "{app}\{#AppExe}"; Description: "{cm:LaunchProgram,{#AppName}}"; Flags: nowait postinstall skipifsilent
