; ddp-launch's Windows installer, made by Debian's makensis (nsis 3.08) in
; packaging/build-windows-installer.sh from the tree `cmake --install` stages. Defines it passes:
;   VERSION   project(VERSION)                  OUTFILE  the setup .exe to write
;   STAGE     the staged install tree           FILES    a generated .nsh: FILE_LIST (File lines) and
;                                                        UNFILE_LIST (Delete lines), the staged files exactly
; Installs for the machine (Program Files, admin), with an uninstaller and an Apps & features entry.
; Options (silent installs: setup.exe /S [/SERVICE=1] [/PATH=0] [/D=C:\dir], /D= last):
;   PATH     (on by default, /PATH=0 leaves it out) the install directory in the machine's PATH
;   SERVICE  (off by default, /SERVICE=1) the job daemon as the Windows service "ddp-launch"
; The uninstaller (uninstall.exe /S) removes the files it installed, the service it registered and
; exactly the PATH entry it added (recorded in its registry key), nothing else.
!ifndef VERSION | STAGE | OUTFILE | FILES
  !error "makensis -DVERSION=… -DSTAGE=… -DOUTFILE=… -DFILES=… (packaging/build-windows-installer.sh)"
!endif

Unicode true
Target amd64-unicode
SetCompressor /SOLID lzma

!include LogicLib.nsh
!include FileFunc.nsh
!include WinMessages.nsh
!include Sections.nsh
!include MUI2.nsh
!include "${FILES}"

!define PRODUCT "ddp-launch"
!define UNINST_KEY "Software\Microsoft\Windows\CurrentVersion\Uninstall\ddp-launch"
!define ENV_KEY "SYSTEM\CurrentControlSet\Control\Session Manager\Environment"
!define SERVICE_NAME "ddp-launch"

Name "${PRODUCT} ${VERSION}"
OutFile "${OUTFILE}"
InstallDir "$PROGRAMFILES64\${PRODUCT}"
InstallDirRegKey HKLM "${UNINST_KEY}" "InstallLocation"
RequestExecutionLevel admin
ShowInstDetails show
ShowUninstDetails show
VIProductVersion "${VERSION}.0"
VIAddVersionKey "ProductName" "${PRODUCT}"
VIAddVersionKey "ProductVersion" "${VERSION}"
VIAddVersionKey "FileVersion" "${VERSION}"
VIAddVersionKey "FileDescription" "${PRODUCT} ${VERSION} setup"
VIAddVersionKey "LegalCopyright" "BSD-3-Clause, the ddp-launch authors"

!insertmacro MUI_PAGE_LICENSE "${STAGE}/LICENSE"
!insertmacro MUI_PAGE_COMPONENTS
!insertmacro MUI_PAGE_DIRECTORY
!insertmacro MUI_PAGE_INSTFILES
!insertmacro MUI_UNPAGE_CONFIRM
!insertmacro MUI_UNPAGE_INSTFILES
!insertmacro MUI_LANGUAGE "English"

Var PathValue   ; the machine's PATH as read (unexpanded)
Var PathResult  ; PATH without the entry (RemovePathEntry)
Var PathFound   ; how many entries equal to the one asked for

; PATH_FUNCTIONS(prefix): the PATH helpers for the installer ("") and the uninstaller ("un.").
;
; NSIS strings hold NSIS_MAX_STRLEN (1024) characters, and a machine's PATH is often longer. For a
; value longer than that ReadRegStr returns "" with the error flag, and writing "" + our entry back
; would wipe the user's PATH (the known failure of the old EnvVarUpdate/AddToPath scripts). So:
; ReadPath tells "no PATH value" from "a value we cannot read whole" (the value exists, by
; EnumRegValue), and the callers leave a PATH they cannot hold whole unchanged, saying so.
!macro PATH_FUNCTIONS un
  ; → $PathValue, and $0: "ok", "missing" or "too-long".
  Function ${un}ReadPath
    Push $1
    Push $2
    ClearErrors
    ReadRegStr $PathValue HKLM "${ENV_KEY}" "Path"
    ${IfNot} ${Errors}
      StrCpy $0 "ok"
    ${Else}
      StrCpy $0 "missing"
      StrCpy $PathValue ""
      StrCpy $1 0
      ${Do}
        ClearErrors
        EnumRegValue $2 HKLM "${ENV_KEY}" $1
        ${If} ${Errors}
        ${OrIf} $2 == ""
          ${Break}
        ${EndIf}
        ${If} $2 == "Path"  ; StrCmp: case-insensitive, as the registry's names
          StrCpy $0 "too-long"
          ${Break}
        ${EndIf}
        IntOp $1 $1 + 1
      ${Loop}
    ${EndIf}
    Pop $2
    Pop $1
  FunctionEnd

  ; $PathValue without every entry equal to $0 (case-insensitive; also with a trailing "\"):
  ; → $PathResult, $PathFound. Every other entry stays as it was, empty ones and order included.
  Function ${un}RemovePathEntry
    Push $1  ; index
    Push $2  ; length
    Push $3  ; the character
    Push $4  ; the entry so far
    Push $5  ; "1" once an entry has been kept
    StrCpy $PathResult ""
    StrCpy $PathFound 0
    StrCpy $1 0
    StrLen $2 $PathValue
    StrCpy $4 ""
    StrCpy $5 ""
    ${Do}
      ${If} $1 < $2
        StrCpy $3 $PathValue 1 $1
      ${Else}
        StrCpy $3 ";"  ; the end closes the last entry
      ${EndIf}
      ${If} $3 == ";"
        ${If} $4 == $0
        ${OrIf} $4 == "$0\"
          IntOp $PathFound $PathFound + 1
        ${ElseIf} $5 == "1"
          StrCpy $PathResult "$PathResult;$4"
        ${Else}
          StrCpy $PathResult "$4"
          StrCpy $5 "1"
        ${EndIf}
        StrCpy $4 ""
      ${Else}
        StrCpy $4 "$4$3"
      ${EndIf}
      IntOp $1 $1 + 1
    ${LoopWhile} $1 <= $2
    Pop $5
    Pop $4
    Pop $3
    Pop $2
    Pop $1
  FunctionEnd
!macroend
!insertmacro PATH_FUNCTIONS ""
!insertmacro PATH_FUNCTIONS "un."

Section "ddp-launch (required)" SecMain
  SectionIn RO
  SetRegView 64
  SetOutPath "$INSTDIR"
  !insertmacro FILE_LIST
  WriteUninstaller "$INSTDIR\uninstall.exe"
  WriteRegStr HKLM "${UNINST_KEY}" "DisplayName" "${PRODUCT} ${VERSION}"
  WriteRegStr HKLM "${UNINST_KEY}" "DisplayVersion" "${VERSION}"
  WriteRegStr HKLM "${UNINST_KEY}" "Publisher" "the ddp-launch authors"
  WriteRegStr HKLM "${UNINST_KEY}" "DisplayIcon" "$INSTDIR\ddp-launch.exe"
  WriteRegStr HKLM "${UNINST_KEY}" "InstallLocation" "$INSTDIR"
  WriteRegStr HKLM "${UNINST_KEY}" "UninstallString" '"$INSTDIR\uninstall.exe"'
  WriteRegStr HKLM "${UNINST_KEY}" "QuietUninstallString" '"$INSTDIR\uninstall.exe" /S'
  WriteRegDWORD HKLM "${UNINST_KEY}" "NoModify" 1
  WriteRegDWORD HKLM "${UNINST_KEY}" "NoRepair" 1
  ${GetSize} "$INSTDIR" "/S=0K" $0 $1 $2
  WriteRegDWORD HKLM "${UNINST_KEY}" "EstimatedSize" $0
SectionEnd

Section "Add to the PATH (all users)" SecPath
  SetRegView 64
  Call ReadPath
  ${If} $0 == "too-long"
    DetailPrint "PATH is longer than ${NSIS_MAX_STRLEN} characters: left unchanged"
    MessageBox MB_OK|MB_ICONEXCLAMATION "The PATH is longer than this installer can edit safely \
      (${NSIS_MAX_STRLEN} characters), so it is left unchanged. Add $INSTDIR to PATH yourself \
      (System Properties > Environment Variables)." /SD IDOK
    Return
  ${EndIf}
  StrCpy $0 "$INSTDIR"
  Call RemovePathEntry
  ${If} $PathFound > 0
    DetailPrint "PATH already has $INSTDIR"
    Return  ; not ours: the uninstaller leaves it
  ${EndIf}
  StrLen $1 $PathValue
  StrLen $2 $INSTDIR
  IntOp $1 $1 + $2
  ${If} $1 >= ${NSIS_MAX_STRLEN}
    DetailPrint "PATH with $INSTDIR would be longer than ${NSIS_MAX_STRLEN} characters: left unchanged"
    MessageBox MB_OK|MB_ICONEXCLAMATION "The PATH would be longer than this installer can edit safely \
      (${NSIS_MAX_STRLEN} characters), so it is left unchanged. Add $INSTDIR to PATH yourself." /SD IDOK
    Return
  ${EndIf}
  ; Always ";" + the entry (even after a trailing ";"): the uninstaller's removal of the entry and
  ; its separator gives back exactly the PATH it found.
  ${If} $PathValue == ""
    StrCpy $PathValue "$INSTDIR"
  ${Else}
    StrCpy $PathValue "$PathValue;$INSTDIR"
  ${EndIf}
  WriteRegExpandStr HKLM "${ENV_KEY}" "Path" $PathValue
  WriteRegStr HKLM "${UNINST_KEY}" "PathEntry" "$INSTDIR"
  DetailPrint "PATH: added $INSTDIR"
  ; Running programs (Explorer, new consoles) read the new PATH.
  SendMessage ${HWND_BROADCAST} ${WM_SETTINGCHANGE} 0 "STR:Environment" /TIMEOUT=5000
SectionEnd

Section /o "Windows service: the job daemon" SecService
  SetRegView 64
  ; The counterpart of the .deb's systemd units: `ddp-launch.exe daemon --service` under the
  ; service manager, started with Windows, stopped by it (docs/windows.md).
  StrCpy $2 `"$INSTDIR\ddp-launch.exe" daemon --service`
  ReadRegStr $1 HKLM "SYSTEM\CurrentControlSet\Services\${SERVICE_NAME}" "ImagePath"
  ${If} $1 == $2
    StrCpy $0 0  ; an install over an earlier one, same directory: registered as it should be
  ${ElseIf} $1 != ""
    ; registered elsewhere by an earlier install: point it here
    nsExec::ExecToLog `"$SYSDIR\sc.exe" config ${SERVICE_NAME} binPath= "\"$INSTDIR\ddp-launch.exe\" daemon --service" start= auto`
    Pop $0
  ${Else}
    nsExec::ExecToLog `"$SYSDIR\sc.exe" create ${SERVICE_NAME} binPath= "\"$INSTDIR\ddp-launch.exe\" daemon --service" start= auto DisplayName= "ddp-launch job daemon"`
    Pop $0
  ${EndIf}
  ${If} $0 != 0
    DetailPrint "sc.exe create ${SERVICE_NAME} failed ($0): the service is not registered"
    MessageBox MB_OK|MB_ICONEXCLAMATION "Registering the service ${SERVICE_NAME} failed (sc.exe: $0)." /SD IDOK
    Return
  ${EndIf}
  WriteRegStr HKLM "${UNINST_KEY}" "Service" "${SERVICE_NAME}"
  nsExec::ExecToLog `"$SYSDIR\sc.exe" description ${SERVICE_NAME} "Queues and runs ddp-launch YAML jobs (ddp-launch daemon)"`
  Pop $0
SectionEnd

!insertmacro MUI_FUNCTION_DESCRIPTION_BEGIN
  !insertmacro MUI_DESCRIPTION_TEXT ${SecMain} "ddp-launch.exe, its README and licence, and the uninstaller."
  !insertmacro MUI_DESCRIPTION_TEXT ${SecPath} "Puts the install directory in the machine's PATH (the uninstaller takes it out)."
  !insertmacro MUI_DESCRIPTION_TEXT ${SecService} "Registers the job daemon as the Windows service ddp-launch (started with Windows)."
!insertmacro MUI_FUNCTION_DESCRIPTION_END

Function .onInit
  SetRegView 64
  ${GetParameters} $R0
  ClearErrors
  ${GetOptions} $R0 "/SERVICE=" $R1
  ${IfNot} ${Errors}
    ${If} $R1 == "1"
      !insertmacro SelectSection ${SecService}
    ${Else}
      !insertmacro UnselectSection ${SecService}
    ${EndIf}
  ${EndIf}
  ClearErrors
  ${GetOptions} $R0 "/PATH=" $R1
  ${IfNot} ${Errors}
    ${If} $R1 == "0"
      !insertmacro UnselectSection ${SecPath}
    ${Else}
      !insertmacro SelectSection ${SecPath}
    ${EndIf}
  ${EndIf}
FunctionEnd

Section "Uninstall"
  SetRegView 64
  ReadRegStr $R0 HKLM "${UNINST_KEY}" "Service"
  ${If} $R0 != ""
    nsExec::ExecToLog `"$SYSDIR\sc.exe" stop $R0`
    Pop $0
    nsExec::ExecToLog `"$SYSDIR\sc.exe" delete $R0`
    Pop $0
    DetailPrint "service $R0: sc.exe delete ($0)"
  ${EndIf}

  ReadRegStr $R0 HKLM "${UNINST_KEY}" "PathEntry"
  ${If} $R0 != ""
    Call un.ReadPath
    ${If} $0 == "ok"
      StrCpy $0 $R0
      Call un.RemovePathEntry
      ${If} $PathFound > 0
        WriteRegExpandStr HKLM "${ENV_KEY}" "Path" $PathResult
        DetailPrint "PATH: removed $R0"
        SendMessage ${HWND_BROADCAST} ${WM_SETTINGCHANGE} 0 "STR:Environment" /TIMEOUT=5000
      ${EndIf}
    ${ElseIf} $0 == "too-long"
      DetailPrint "PATH is longer than ${NSIS_MAX_STRLEN} characters: left unchanged"
      MessageBox MB_OK|MB_ICONEXCLAMATION "The PATH is longer than this uninstaller can edit safely, \
        so it is left unchanged: take $R0 out of it yourself." /SD IDOK
    ${EndIf}
  ${EndIf}

  !insertmacro UNFILE_LIST
  Delete "$INSTDIR\uninstall.exe"
  RMDir "$INSTDIR"  ; only when empty: files someone else put there stay
  DeleteRegKey HKLM "${UNINST_KEY}"
SectionEnd
